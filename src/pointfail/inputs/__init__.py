"""Machinery: inputs and studies -- benchmark loaders and fetchers, study files and locks, the
replies a user brings, the model hub's file lists.
"""
