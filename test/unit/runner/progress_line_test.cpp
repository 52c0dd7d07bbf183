#include <catch2/catch.hpp>

#include <sstream>

#include "runner/progress_line.hpp"

using namespace csrun;

TEST_CASE("the progress line redraws in place, steps aside for log lines and ends cleanly") {
  std::ostringstream out;
  runner::ProgressLine line(out, true);
  line.show("Train 1/4");
  CHECK(out.str() == "\rTrain 1/4\033[K");
  line.show("Train 2/4");  // within 100 ms of the last draw: remembered, not drawn
  CHECK(out.str() == "\rTrain 1/4\033[K");
  line.show("Train 3/4", true);
  line.hide();
  out << "a log line\n";
  line.restore();
  line.finish();
  line.restore();  // nothing left to draw
  CHECK(out.str() ==
        "\rTrain 1/4\033[K\rTrain 3/4\033[K\r\033[Ka log line\n\rTrain 3/4\033[K\r\033[K");
}

TEST_CASE("without a terminal the progress line prints nothing") {
  std::ostringstream out;
  runner::ProgressLine line(out, false);
  line.show("Train 1/4", true);
  line.hide();
  line.restore();
  line.finish();
  CHECK(out.str().empty());
}

TEST_CASE("progress text: bar, counts, loss, rate and the time left") {
  CHECK(runner::progress_text("Train", 150, 600, 2.4125, 27.54, 30.0) ==
        "Train [#####...............] 150/600  25%  loss 2.41250  27.5 samples/s  ETA 1:30");
  CHECK(runner::progress_text("Eval ", 10, 10, 1.5, 80.0, 2.0) ==
        "Eval  [####################] 10/10 100%  loss 1.50000  80.0 samples/s");
  CHECK(runner::progress_text("Train", 1, 10000, 1.0, 1.0, 4.0).ends_with("ETA 11:06:36"));
}
