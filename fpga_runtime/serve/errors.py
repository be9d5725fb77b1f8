"""What can go wrong between a client and a board, each with the HTTP status the ingress answers with."""
from __future__ import annotations


class ServeError(Exception):
    status = 500


class RequestRefused(ServeError, ValueError):
    """The request itself is wrong (not a frame of this model, not an image, too big): the client's to fix."""
    status = 400


class BoardDown(ServeError):
    """A board failed or hung while it had the frame: the ingress sends the frame to another replica."""
    status = 503


class Saturated(ServeError):
    """Every board is busy and the bounded queue is full: back-pressure, retry later."""
    status = 503


class NoBoard(ServeError):
    """No replica could take the frame after every retry."""
    status = 503
