"""Fabric history: every run kept in a database, regressions flagged the night they appear.

:mod:`.db` (SQLite, DuckDB, PostgreSQL behind one small layer), :mod:`.schema`
(tables, version, migrations), :mod:`.store` (:class:`History`: the fabric,
adding runs with their tomography, reading, pruning), :mod:`.stats`
(Mann-Whitney and Hodges-Lehmann), :mod:`.check` (tonight against the
baseline nights), :mod:`.series` (a class, pair, host or cable over time).
Sits above diagnose/ and model/; the CLI is ``fabscope.cli.history``.
"""
