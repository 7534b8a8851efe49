"""Durations as people read them: "412 ms", "3.0 s", "16 min 50 s", "2 h 5 min"."""


def duration_text(milliseconds: float | None) -> str:
    """One or two units, never a bare count of milliseconds past a second; "" for None."""
    if milliseconds is None:
        return ""
    ms = max(float(milliseconds), 0.0)
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"
