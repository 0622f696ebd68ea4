"""The compaction core. It never imports streamlit or plotly."""
