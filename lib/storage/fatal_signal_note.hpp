#pragma once

// What a crash was doing. Some libraries csrun calls can crash on a damaged input file (libhdf5
// reads past its buffers on some damaged HDF5 files it parses); csrun calls them inside a note
// naming the file, so that a crash says which file to look at instead of a bare
// "Segmentation fault".

#include <string>

namespace csrun::storage {

// While it lives, a fatal signal on this thread (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
// prints "csrun: <signal>: <text>" on stderr before the process ends as the signal ends it.
// Notes nest: the innermost is printed. `text` must outlive the note.
class FatalSignalNote {
 public:
  explicit FatalSignalNote(const std::string& text);
  ~FatalSignalNote();
  FatalSignalNote(const FatalSignalNote&) = delete;
  FatalSignalNote& operator=(const FatalSignalNote&) = delete;

  const std::string& text() const { return text_; }

 private:
  const FatalSignalNote* enclosing_;
  const std::string& text_;
};

// Installs the handler that prints the notes: once, early in main, by a program that wants them.
void note_fatal_signals();

}  // namespace csrun::storage
