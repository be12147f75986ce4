"""medmon governance dashboard (Streamlit multipage entry point)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="medmon", layout="wide")
st.navigation([
    st.Page("pages/overview.py", title="Overview", url_path="overview", default=True),
]).run()
