"""Ranked recall statements and each backend's part of them (SQLite, Postgres + pgvector).

Between the recall pipeline (memstore.recall), which never builds SQL, and the
repositories. Also the SQL that keeps vectors comparable: the recorded embedder
(settings) and re-embedding (reembed).
"""
