"""The one progress reporter of every command (`Reporter`, `reporting`, `quiet_option`).

A library function reports phases and steps through `ssgallery.progress.Progress`;
this module shows them on stderr:

- on a terminal, click's progress bar (position, percentage, ETA) with the rate, drawn
  once a phase has run for `DELAY` seconds (short phases leave nothing on screen) and
  redrawn at most every `REDRAW` seconds;
- on a pipe or a log file, one plain line every `INTERVAL` seconds of the command
  (``ssgallery: enroll: reading images 1200/1853 (65%), 41.2 images/s, ETA 0:00:15``),
  counted across phases, so that a run of short phases (roc's repetitions) prints too,
  and a closing line for a phase that printed one;
- both also while a step runs long without advancing (an SVD, in LAPACK): a heartbeat
  thread draws the bar, or prints the phase's line, as a step would;
- nothing with ``--quiet``.

``$SSGALLERY_PROGRESS_INTERVAL`` (seconds) overrides `INTERVAL` and `DELAY` (``0``: a
line at every step, as the tests use it).

Usage in a command::

    @quiet_option
    def command(..., quiet):
        with reporting(quiet) as progress:
            result = app_function(..., progress=progress)
"""

import contextlib
import sys
import threading
import time

import click

from ssgallery.progress import Progress

DELAY = 1.0  # seconds a phase runs before a terminal shows its bar
INTERVAL = 10.0  # seconds between the plain lines on a pipe
REDRAW = 0.1  # seconds between redraws of a terminal bar
ENV_INTERVAL = "SSGALLERY_PROGRESS_INTERVAL"


QUIET_HELP = ("Quiet, the same for every command: no progress on stderr and no summary of "
              "what was written on stdout (enroll, compress, synth and show print nothing "
              "there, roc no 'wrote to' line); the answers asked for (verify's and "
              "identify's decisions, info, roc's table, synth --check's figures) and --json "
              "still print, and warnings and errors always do (stderr).")


def quiet_option(func):
    """``-q/--quiet``, one meaning for every command (`QUIET_HELP`; docs/guide.md,
    "Quiet runs"): no progress (`reporting`), and a command that writes files prints
    no summary of them; answers, --json, warnings and errors still print."""
    return click.option("-q", "--quiet", is_flag=True, help=QUIET_HELP)(func)


def _clock(seconds):
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _rate(done, elapsed, unit):
    if done <= 0 or elapsed <= 0:
        return ""
    rate = done / elapsed
    text = f"{rate:.3g}" if rate < 1000 else f"{rate:,.0f}"
    return f"{text} {unit or 'steps'}/s"


class Reporter(Progress):
    """Shows the phases of one command on ``file`` (default stderr): see the module.

    Parameters
    ----------
    name : str
        The command, shown in the plain lines (``ssgallery: NAME: ...``).
    file : file object, optional
    terminal : bool, optional
        Draw bars (default: whether ``file`` is a terminal).
    interval, delay : float, optional
        Seconds between plain lines, and before a bar is drawn.
    """

    def __init__(self, name="", file=None, terminal=None, interval=None, delay=None):
        self.name = name
        self.file = sys.stderr if file is None else file
        self.terminal = _isatty(self.file) if terminal is None else terminal
        env = _env_interval()
        self.interval = interval if interval is not None else (INTERVAL if env is None else env)
        self.delay = delay if delay is not None else (DELAY if env is None else env)
        self.label = self.label_seen = None
        self._lock = threading.RLock()  # the steps and the heartbeat draw one at a time
        self._stop, self._beat = threading.Event(), None

    # ----------------------------------------------------------------- the phase
    def start(self, label, total, unit=""):
        with self._lock:
            self.end()
            self.label, self.total, self.unit = label, max(int(total), 0), unit
            self.done = self.shown = 0
            self.began = time.monotonic()
            # a terminal's redraws are per bar; a pipe's lines every interval of the
            # command, whatever phase runs (the first phase starts the count)
            self.last = self.began if self.terminal or self.label_seen is None \
                else self.last
            self.label_seen = label
            self.bar = None
            self.lines = 0
        self._heartbeat()

    def advance(self, n=1):
        with self._lock:
            if self.label is None:
                return
            self.done += n
            now = time.monotonic()
            if self.terminal:
                self._draw(now)
            elif now - self.last >= self.interval:
                self._line(now)

    def end(self):
        with self._lock:
            self._end()

    def close(self):
        """Stop the heartbeat (`reporting` does, on the way out)."""
        self._stop.set()

    def _heartbeat(self):
        """A step that runs long in compiled code (an SVD, a plot) advances nothing: a
        daemon thread draws the phase as the steps would, the bar after `DELAY` on a
        terminal and a line every `INTERVAL` on a pipe (none with an interval of 0)."""
        period = self.delay if self.terminal else self.interval
        if self._beat is not None or not period or period <= 0:
            return

        def beat():
            while not self._stop.wait(period):
                with self._lock:
                    if self.label is None:
                        continue
                    now = time.monotonic()
                    if self.terminal:
                        self._draw(now)
                    elif now - self.last >= self.interval:
                        self._line(now)

        self._beat = threading.Thread(target=beat, name="ssgallery-progress", daemon=True)
        self._beat.start()

    def _end(self):
        if self.label is None:
            return
        now = time.monotonic()
        if self.bar is not None:
            self._draw(now, final=True)
            self.bar.render_finish()
        elif not self.terminal and self.lines:
            self._line(now, final=True)
        self.label = self.bar = None

    # ----------------------------------------------------------------- drawing
    def _draw(self, now, final=False):
        elapsed = now - self.began
        if self.bar is None:
            if elapsed < self.delay or final:
                return
            self.bar = click.progressbar(length=max(self.total, 1), label=self.label,
                                         file=self.file, show_pos=True, width=20,
                                         item_show_func=lambda text: text)
            self.bar.__enter__()
            self.last = now - REDRAW
        if final or now - self.last >= REDRAW:
            step = min(self.done, self.total) - self.shown
            self.bar.update(step, _rate(self.done, elapsed, self.unit))
            self.shown += step
            self.last = now

    def _line(self, now, final=False):
        elapsed = now - self.began
        head = f"ssgallery: {self.name}: " if self.name else "ssgallery: "
        if final:  # the unit once: "training clients 8/8 in", "one 1/2 clients in"
            unit = "" if not self.unit or self.label.endswith(self.unit) else f" {self.unit}"
            text = f"{self.label} {self.done}/{self.total}{unit} in {_clock(elapsed)}"
        else:
            pct = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
            text = f"{self.label} {self.done}/{self.total}{pct}"
            rate = _rate(self.done, elapsed, self.unit)
            if rate:
                text += f", {rate}"
                if self.total > self.done:
                    text += f", ETA {_clock((self.total - self.done) * elapsed / self.done)}"
        click.echo(head + text, file=self.file)
        self.last = now
        self.lines += 1


def _isatty(file):
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _env_interval():
    from ssgallery.safeio import env_seconds

    return env_seconds(ENV_INTERVAL, None)


@contextlib.contextmanager
def reporting(quiet=False, name=None):
    """A `Reporter` for the current command (``name``: default the command's name), or
    a silent `ssgallery.progress.Progress` with ``quiet``; the last phase is closed on
    the way out, also on an error, so that a message starts on its own line."""
    if quiet:
        yield Progress()
        return
    if name is None:
        ctx = click.get_current_context(silent=True)
        name = ctx.info_name if ctx is not None else ""
    reporter = Reporter(name)
    try:
        yield reporter
    finally:
        reporter.end()
        reporter.close()


__all__ = ["Reporter", "quiet_option", "reporting"]
