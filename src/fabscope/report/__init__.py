"""fabscope.report: terminal tables (tables.py) and the one-file HTML report.

The HTML report needs the optional ``report`` dependencies (plotly, jinja2,
kaleido for PNG/SVG export, websocket-client for the browser checks)::

    from fabscope.report.build import read_inputs, write_report
    runs = read_inputs(["leafpairs.json"])
    write_report(runs, "itasca.html")

Modules: inputs (reading and checking files), leafmatrix (the all-pairs leaf matrix of a run),
compare (measured beside modeled, runs against runs), figures (Plotly pictures), sections (tables and
pictures per run), html (the page), export (PNG/SVG), browser (headless
Chromium checks), build (all of it in order).
"""
