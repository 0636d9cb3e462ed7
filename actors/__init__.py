"""Self-play actors: AVI collection and the Ray actor pool."""
