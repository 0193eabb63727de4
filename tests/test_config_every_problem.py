"""`herowatch check-config` reports every problem of a file in one pass, each as FILE:LINE: FIELD:
MESSAGE: invalid fields do not hide the checks across fields (unknown receivers, rule names, matchers),
a receiver taken out for its own problem is not reported again where it is named, and the fields of
later list items keep the file's own indices."""

from __future__ import annotations

from typer.testing import CliRunner

from monitor.cli.main import app

FIVE = """\
watch:
  - name: a
    poll_intervall: 30s
    sim:
      step_time: fast
  - name: b
    sim: {}
    rules:
      overrides:
        no_such_rule: {floor: 5m}
receivers:
  - name: console
    kind: consol
  - name: board
    kind: dashboard
route:
  receiver: nobody
  routes:
    - {matchers: ['severity=~"("'], receiver: board}
"""


def check(tmp_path, text: str) -> tuple[int, list[str]]:
    path = tmp_path / "hw.yaml"
    path.write_text(text)
    r = CliRunner().invoke(app, ["check-config", str(path)])
    return r.exit_code, [line.strip().replace(str(path), "hw.yaml") for line in r.output.splitlines()]


def test_five_different_mistakes_are_five_problems(tmp_path):
    code, lines = check(tmp_path, FIVE)
    assert code == 2
    assert lines[0] == "hw.yaml: 6 problems", lines
    said = lines[1:]
    assert said[0].startswith("hw.yaml:3: watch[0].poll_intervall: unknown field"), said
    assert said[1].startswith("hw.yaml:5: watch[0].sim.step_time: 'fast' is not a duration"), said
    assert said[2].startswith("hw.yaml:10: watch[1].rules.overrides.no_such_rule: no rule named"), said
    assert said[3].startswith("hw.yaml:13: receivers[0].kind: unknown receiver kind 'consol'"), said
    assert said[4] == "hw.yaml:17: route.receiver: 'nobody' is not a receiver; known: board, console", said
    assert said[5].startswith("hw.yaml:19: route.routes[0].matchers[0]: bad regex in matcher"), said


def test_a_receiver_removed_for_its_own_problem_is_not_reported_again(tmp_path):
    text = FIVE.replace("receiver: nobody", "receiver: console")
    code, lines = check(tmp_path, text)
    assert code == 2 and lines[0] == "hw.yaml: 5 problems", lines
    assert not [line for line in lines if "route.receiver" in line], lines


def test_later_items_keep_their_indices_when_an_earlier_one_is_invalid(tmp_path):
    text = """\
watch:
  - sim: {}
  - name: b
    sim: {}
  - name: b
    sim: {}
    rules: {overrides: {nope: {}}}
receivers: [{name: console, kind: console}]
route: {receiver: console}
"""
    code, lines = check(tmp_path, text)
    assert code == 2, lines
    KNOWN = lines[-1].split("known: ")[-1]  # noqa: N806
    assert "progress_stalled" in KNOWN
    assert lines[1:] == [
        "hw.yaml:2: watch[0].name: required field is missing",
        "hw.yaml:5: watch[2].name: 'b' is already the name of watch[1]",
        "hw.yaml:7: watch[2].rules.overrides.nope: no rule named 'nope'; known: " + KNOWN,
    ], lines


ISSUE_38 = """\
watch:
  - name: a
    gpu: 8
    poll_interval: 30x
    sim: {}
    rules:
      overrides:
        no_such_rule: {floor: 5m}
rules: {packs: [hero, no_such_pack]}
route:
  receiver: nobody
"""


def test_an_unknown_pack_does_not_hide_the_other_mistakes_and_a_misspelt_field_gets_a_did_you_mean(tmp_path):
    code, lines = check(tmp_path, ISSUE_38)
    assert code == 2 and lines[0] == "hw.yaml: 5 problems", lines
    said = lines[1:]
    assert said[0].startswith("hw.yaml:3: watch[0].gpu: unknown field; did you mean `gpus`?"), said
    assert said[1].startswith("hw.yaml:4: watch[0].poll_interval: '30x' is not a duration"), said
    assert said[2].startswith("hw.yaml:8: watch[0].rules.overrides.no_such_rule: no rule named"), said
    assert said[3] == "hw.yaml:9: rules.packs[1]: no built-in pack 'no_such_pack'; known: hero, rl, sft", said
    assert said[4].startswith("hw.yaml:11: route.receiver: 'nobody' is not a receiver"), said


def test_misspelt_settings_of_a_rule_and_of_a_receiver_kind_get_a_did_you_mean(tmp_path):
    text = (
        "watch:\n  - name: a\n    sim: {}\n    rules:\n      overrides:\n"
        "        progress_stalled: {flor: 5m}\n"
        "receivers:\n  - {name: s, kind: slack, chanel: C0}\n"
    )
    code, lines = check(tmp_path, text)
    assert code == 2, lines
    assert (
        "hw.yaml:6: watch[0].rules.overrides.progress_stalled.flor: progress_stalled has no setting 'flor'; "
        "did you mean 'floor'?" in lines
    ), lines
    assert any(
        x.startswith("hw.yaml:8: receivers[0].chanel: unknown field; did you mean `channel`?") for x in lines
    )


def test_a_yaml_syntax_error_is_file_line_and_a_sentence_not_the_parsers_raw_text(tmp_path):
    code, lines = check(tmp_path, "watch:\n  - name: a\n    sim: {seed: 1\n  - name: b\n")
    assert code == 2 and lines[0] == "hw.yaml: 1 problem", lines
    assert lines[1] == (
        "hw.yaml:4: not valid YAML (column 9): expected ',' or '}', but got ':' "
        "(in the flow mapping that began on line 3, column 10)"
    ), lines
    code, lines = check(tmp_path, "watch:\n  - name: a\n   sim: {}\n")
    assert lines[1].startswith("hw.yaml:3: not valid YAML (column 4): the indentation does not match"), lines
    code, lines = check(tmp_path, "watch:\n\t- name: a\n")
    assert (
        lines[1] == "hw.yaml:2: not valid YAML (column 1): a tab character: YAML indents with spaces only"
    ), lines
