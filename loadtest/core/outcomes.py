"""How a command that runs every stack ends: the loud list of skipped stacks and its tally.

`make check`, `make hostile` and `make soak` end the same way, so a missing
toolchain is never a quiet pass: each skipped stack is named with its reason
between two rows of `!`, then one line counts passed, failed and skipped.
"""

from __future__ import annotations

BANNER = "!" * 72


def skipped_banner(skipped: list[tuple[str, str]]) -> list[str]:
    """(stack, reason) pairs as the banner's lines; nothing when no stack was skipped."""
    if not skipped:
        return []
    return [
        BANNER,
        f"!! SKIPPED {len(skipped)} stack(s), toolchain missing on this machine:",
        *(f"!!   {stack}: {reason}" for stack, reason in skipped),
        BANNER,
    ]


def tally(command: str, total: int, failed: int, skipped: int) -> str:
    return f"{command}: {total - failed - skipped} passed, {failed} failed, {skipped} skipped"
