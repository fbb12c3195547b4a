"""Moved to `ssgallery.matchers.external.serve` (the persistent ``--serve`` session);
this name is kept so that existing imports keep working."""

from ssgallery.matchers.external.serve import MatcherServer, close_shared, shared_server

__all__ = ["MatcherServer", "close_shared", "shared_server"]
