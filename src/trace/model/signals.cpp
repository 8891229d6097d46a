#include "trace/model/signals.hpp"

#include <signal.h>

#include <cstring>

#include <fmt/format.h>

namespace ridge::detail {

static_assert(forwarded_signals[0] == SIGINT && forwarded_signals[1] == SIGTERM && forwarded_signals[2] == SIGHUP &&
              forwarded_signals[3] == SIGQUIT);

bool fatal_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGABRT;
}

SignalAction action_for(int sig, PreviousHandler previous) {
  if (fatal_signal(sig)) return SignalAction::flush_and_reraise;
  switch (previous) {
    case PreviousHandler::function: return SignalAction::chain;
    case PreviousHandler::ignored: return SignalAction::ignore;
    case PreviousHandler::default_action: break;
  }
  return SignalAction::flush_and_reraise;
}

const char* end_reason(int sig) { return fatal_signal(sig) ? "crash" : "signal"; }

bool forward_to_program(int sig, bool from_terminal, bool program_in_own_group) {
  bool forwarded = false;
  for (int s : forwarded_signals) forwarded |= s == sig;
  if (!forwarded) return false;
  return !from_terminal || program_in_own_group;
}

std::string partial_trace_note(const std::string& end, int signal, int forwarded) {
  std::string why;
  if (forwarded != 0) why = fmt::format("ridge trace passed signal {} ({}) on to the program", forwarded, strsignal(forwarded));
  if (end == "crash" || end == "signal") {
    const std::string what = end == "crash" ? "the program crashed" : "the program was interrupted";
    const std::string by = signal != 0 ? fmt::format(" by signal {} ({})", signal, strsignal(signal)) : std::string();
    return fmt::format("{}{}{}: the trace holds what was collected until then", what, by,
                       why.empty() ? "" : " after " + why);
  }
  if (!why.empty())
    return fmt::format("{}; the program exited{}, so the trace covers the run up to that exit", why,
                       signal != 0 ? fmt::format(" on signal {} ({})", signal, strsignal(signal)) : std::string());
  return "";
}

}  // namespace ridge::detail
