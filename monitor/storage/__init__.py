"""Storage: SQLAlchemy models, the database connection, and the queries the engine and API use."""
