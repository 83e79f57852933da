"""The one error type every harness step raises."""

from __future__ import annotations


class StepError(Exception):
    """A step failed for one stack: names the stack, the step and why.

    `output` carries the tail of the stack's own output (build log or server
    log) so that the person reading the message sees the real cause.
    """

    def __init__(self, stack: str, step: str, message: str, output: str = "") -> None:
        super().__init__(f"[{stack}] {step} failed: {message}")
        self.stack = stack
        self.step = step
        self.message = message
        self.output = output

    def explain(self) -> str:
        """The message plus the stack's output, indented, for terminals and logs."""
        if not self.output.strip():
            return str(self)
        tail = "\n".join("    " + line for line in self.output.rstrip().splitlines())
        return f"{self}\n  output of {self.stack}:\n{tail}"
