"""The JSON API's operations on runs (`endpoints`, `lifecycle_endpoints`) and its page for
people (`docs_page`); `runs.api_urls` mounts them.
"""
