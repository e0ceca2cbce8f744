"""Machinery: running models and judges -- backends (in-process models), the served client, the
worker and its job files, ``evaluate``, and the judges' clients, kinds and stage.
"""
