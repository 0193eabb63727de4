/* herowatch /docs: starts the vendored Swagger UI on herowatch's own OpenAPI document (no CDN). */
(function () {
  "use strict";
  window.addEventListener("load", function () {
    window.ui = window.SwaggerUIBundle({
      url: "/openapi.json",
      dom_id: "#swagger-ui",
      deepLinking: true,
      presets: [window.SwaggerUIBundle.presets.apis],
      layout: "BaseLayout"
    });
  });
})();
