"""A samples file as it arrives: read, bounded, and checked against its dataset and its
language (`files`), with the language check a worker answers (`language_checks`). The
services stage and create runs from what these checks return.
"""
