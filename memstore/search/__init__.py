"""Ranked recall statements every backend shares; each backend's part is in its folder.

``search/backends.py`` asks the engine's dialect for its half (memstore/backends/<name>/).

Between the recall pipeline (memstore.recall), which never builds SQL, and the
repositories. Also the SQL that keeps vectors comparable: the recorded embedder
(settings) and re-embedding (reembed).
"""
