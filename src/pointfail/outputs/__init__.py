"""Machinery: what users look at -- the report (figures) and the study browser (view).
"""
