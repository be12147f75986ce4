"""The dashboard's pages, one module per page, run by ``st.navigation`` in ``dashboards/app.py``.

The folder is deliberately not called ``pages``: Streamlit treats a ``pages/`` folder beside
the entry point as a legacy multipage app and serves each file on its own, which would skip
the sign-in gate in ``app.py``.
"""
