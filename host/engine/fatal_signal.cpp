#include "engine/fatal_signal.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <memory>

namespace exactly::engine {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

struct Line {
  char buf[1536];
  size_t n = 0;
  void add(const char* s) {
    while (s && *s && n + 1 < sizeof(buf)) buf[n++] = *s++;
  }
};

// The instruction that faulted, when the architecture is known here.
const void* faulting_pc(void* uc) {
#if defined(__x86_64__)
  return reinterpret_cast<const void*>(static_cast<ucontext_t*>(uc)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return reinterpret_cast<const void*>(static_cast<ucontext_t*>(uc)->uc_mcontext.pc);
#else
  (void)uc;
  return nullptr;
#endif
}

void on_fatal(int sig, siginfo_t*, void* uc) {
  Line l;
  l.add("exactly: fatal ");
  l.add(signal_name(sig));
  if (const char* label = current_call_label()) {
    l.add(" in ");
    l.add(label);
    l.add(", during ");
    l.add(current_call_fn());
    // The records it was given: a crash on a poison record repeats at every restart, and
    // the operator has to find the record to skip.
    if (const char* origin = current_call_origin()) {
      l.add(" (working on ");
      l.add(origin);
      l.add(")");
    }
  } else {
    l.add(" outside any plugin call on this thread");
  }
  // Which library the faulting instruction belongs to: names the plugin also when it
  // crashed on a thread of its own. (dladdr only reads the loaded-object list.)
  Dl_info info{};
  const void* pc = sig == SIGABRT ? nullptr : faulting_pc(uc);
  if (pc != nullptr && dladdr(pc, &info) != 0 && info.dli_fname != nullptr) {
    l.add("; faulting code in ");
    l.add(info.dli_fname);
  }
  l.add("\n");
  ssize_t ignored = ::write(STDERR_FILENO, l.buf, l.n);
  (void)ignored;
  // SA_RESETHAND restored the default action; the signal is blocked until we return, so
  // it is delivered (and kills, with a core if enabled) right after.
  ::raise(sig);
}

}  // namespace

void install_fatal_signal_report() {
  struct sigaction sa {};
  sa.sa_sigaction = &on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : kSignals) ::sigaction(sig, &sa, nullptr);
  use_alternate_signal_stack();
}

namespace {
constexpr size_t kAltStackSize = 64 * 1024;

struct AltStack {
  std::unique_ptr<char[]> mem{new char[kAltStackSize]};
  AltStack() {
    stack_t ss{};
    ss.ss_sp = mem.get();
    ss.ss_size = kAltStackSize;
    ::sigaltstack(&ss, nullptr);
  }
  ~AltStack() {  // at thread exit: stop using it before it is freed
    stack_t ss{};
    ss.ss_flags = SS_DISABLE;
    ::sigaltstack(&ss, nullptr);
  }
};
}  // namespace

void use_alternate_signal_stack() {
  thread_local AltStack stack;
  (void)stack;
}

}  // namespace exactly::engine
