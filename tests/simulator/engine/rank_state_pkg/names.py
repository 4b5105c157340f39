"""Globals named as sys's per-rank attributes."""
path = 'data/'
argv = ['--mine']
stdout = 'a file name'
excepthook = None
