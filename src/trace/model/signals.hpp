// What the tracer does with signals, decided apart from the signal handlers so that it is
// unit-tested without CUPTI or a GPU: `ridge trace` forwarding signals to the traced program
// (launch.cpp), and libridge_inject.so flushing the trace when the program is interrupted or
// crashes (cupti/inject.cpp).
#pragma once

#include <string>

namespace ridge::detail {

/// The program's own disposition of a signal, read with sigaction before ours is installed.
enum class PreviousHandler { default_action, ignored, function };

/// What libridge_inject.so's handler does with a signal.
enum class SignalAction {
  chain,              ///< call the program's handler; the trace is written at its exit
  ignore,             ///< the program ignores the signal: so do we
  flush_and_reraise,  ///< write the trace, restore the program's disposition, raise the signal again
};

/// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: the program cannot go on after them.
bool fatal_signal(int sig);

/// A fatal signal is flushed first even when the program handles it (its handler may well never
/// return, e.g. a crash reporter that calls _exit). An interrupt the program handles is left to
/// it (Python turns SIGINT into KeyboardInterrupt and exits normally, writing at exit).
SignalAction action_for(int sig, PreviousHandler previous);

/// The `end` the summary records for a trace written from a signal handler.
const char* end_reason(int sig);

/// Whether `ridge trace` passes a signal it received on to the program. A Ctrl-C typed at the
/// terminal (`from_terminal`, si_code SI_KERNEL) already reached every process in the foreground
/// group, so it is passed on only when the program runs in a group of its own; a signal sent to
/// ridge alone (kill, a job scheduler's SIGTERM) is always passed on.
bool forward_to_program(int sig, bool from_terminal, bool program_in_own_group);

/// The signals `ridge trace` forwards while it waits for the program.
inline constexpr int forwarded_signals[] = {2 /*SIGINT*/, 15 /*SIGTERM*/, 1 /*SIGHUP*/, 3 /*SIGQUIT*/};

/// A sentence saying how much of the run a trace covers when it did not end at a normal exit
/// (`end` from the summary, `signal` the one that ended the program, `forwarded` the one ridge
/// passed on); "" for a complete trace.
std::string partial_trace_note(const std::string& end, int signal, int forwarded);

}  // namespace ridge::detail
