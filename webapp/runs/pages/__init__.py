"""The run pages: the views of each feature and the live page's WebSocket consumer. The top
layer of the runs app, with the API: it may use every layer below.
"""
