"""Machinery: generated suites, OCR baselines and the stand-ins (fake servers, tiny checkpoints,
stand-in releases) the tests and the artifact run against.
"""
