"""Reading answers out of replies: units (pint) and the languages answers are written in."""
