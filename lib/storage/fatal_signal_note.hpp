#pragma once

// What a crash was doing. Some libraries csrun calls can crash on a damaged input file (libhdf5
// reads past its buffers on some damaged HDF5 files it parses); csrun calls them inside a note
// naming the file, so that a crash says which file to look at instead of a bare
// "Segmentation fault".

#include <string>

namespace csrun::storage {

// While it lives, a fatal signal on this thread (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
// prints "csrun: <signal>: <text>" on stderr; then the signal does what it did before the
// notes were installed (ends the process, or a sanitizer reports it).
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

// Installs the handler that prints the notes, keeping what each signal did before for after the
// note: once, early in main (after a sanitizer's handlers), by a program that wants them.
void note_fatal_signals();

}  // namespace csrun::storage
