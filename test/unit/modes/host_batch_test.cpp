#include <catch2/catch.hpp>

#include "modes/host_batch.hpp"
#include "storage/host_memory.hpp"

using namespace csrun;

namespace {

// An eval plan of 120 samples whose samples each need 1/50 of this machine's usable memory.
compiler::Plan eval_plan_of_fiftieths() {
  compiler::Plan plan;
  plan.batch_size = 120;
  auto usable = static_cast<double>(storage::usable_memory_bytes());
  plan.memory.persistent_bytes = 1'000'000'000;
  plan.memory.peak_bytes = plan.memory.persistent_bytes + static_cast<std::int64_t>(usable * 2.4);
  return plan;
}

}  // namespace

TEST_CASE("an eval batch that fits host memory runs whole") {
  compiler::Plan plan;
  plan.batch_size = 120;
  plan.memory.persistent_bytes = 1000;
  plan.memory.peak_bytes = 5000;
  modes::HostBatch host = modes::plan_host_eval_batch(plan, 0.0);
  CHECK(host.micro_batch == 120);
  CHECK(host.micro_steps == 1);
  CHECK(host.reason.empty());
}

TEST_CASE("an eval batch too large for host memory runs as host batches of a divisor that fits") {
  REQUIRE(storage::usable_memory_bytes() > 8'000'000'000ull);
  compiler::Plan plan = eval_plan_of_fiftieths();
  // 80 % of the memory holds about 39 samples: the largest divisor of 120 below is 30.
  modes::HostBatch host = modes::plan_host_eval_batch(plan, 0.0);
  CHECK(host.micro_batch == 30);
  CHECK(host.micro_steps == 4);
  CHECK_THAT(host.reason, Catch::Contains("Each eval batch of 120 samples runs as 4 host batches "
                                          "of 30") &&
                              Catch::Contains(storage::usable_memory_text()));

  // Beside training that holds 40 % of it, about 19 samples fit: 15 of them.
  auto training = static_cast<double>(storage::usable_memory_bytes()) * 0.4;
  host = modes::plan_host_eval_batch(plan, training);
  CHECK(host.micro_batch == 15);
  CHECK(host.micro_steps == 8);
  CHECK_THAT(host.reason, Catch::Contains("beside the " + storage::memory_size(training)));
}

TEST_CASE("an evaluation that does not fit beside training even one sample at a time is refused") {
  compiler::Plan eval = eval_plan_of_fiftieths();
  auto usable = static_cast<double>(storage::usable_memory_bytes());
  // Beside 70 % of the memory, host batches of a few samples (1/50 each, and the plan's 1 GB)
  // fit.
  double beside = usable * 0.7;
  modes::HostBatch host = modes::plan_host_eval_batch(eval, beside);
  config::TrainerSpec trainer;
  CHECK(host.micro_steps > 1);
  CHECK_NOTHROW(modes::check_eval_fits_host(host, beside, trainer));
  // Beside all but 1/100 of it, it does not: refused with the figures and what to do.
  beside = usable * 0.99;
  host = modes::plan_host_eval_batch(eval, beside);
  CHECK(host.micro_batch == 1);
  CHECK_THROWS_WITH(modes::check_eval_fits_host(host, beside, trainer),
                    Catch::Contains("the evaluation inside fit needs about") &&
                        Catch::Contains("in host batches of 1 sample, beside the") &&
                        Catch::Contains("train without evaluating (--set "
                                        "trainer.init.loop.eval_frequency=null)"));
}

TEST_CASE("a training run's host memory: the step's, and a split batch's gradient sums") {
  graph::Graph graph;
  graph.add_variable("w", {{1000}, graph::DType::f32}, graph::VariableRole::parameter, {});
  graph.add_variable("w.moment", {{1000}, graph::DType::f32}, graph::VariableRole::optimizer_state,
                     {});
  compiler::Plan plan;
  plan.graph = std::move(graph);
  plan.batch_size = 2;
  plan.memory.persistent_bytes = 8000;
  plan.memory.peak_bytes = 10'000;  // 1,000 bytes of temporaries a sample
  modes::HostBatch whole = modes::plan_host_batch(2, 1, 2, plan);
  // Checkpoints are written from the variables (in the loop or in the background) and read into
  // them: the step's memory alone, beside the process's own.
  CHECK(whole.bytes == 10'000.0 + modes::kProcessBytes);
  CHECK(whole.state_bytes == 8000.0);
  CHECK(whole.micro_steps == 1);
  // Micro-steps of 1: the update's state (the micro-step reads its weights where the update keeps
  // them) and the sum of the gradients in the update's inputs, where each micro-step adds its
  // gradients as it computes them.
  modes::HostBatch split = modes::plan_host_batch(2, 1, 1, plan);
  CHECK(split.micro_steps == 2);
  CHECK(split.bytes == 8000.0 + 4000.0 + 1000.0 + modes::kProcessBytes);
  // Two replicas: the total over the replicas beside them.
  modes::HostBatch replicas = modes::plan_host_batch(2, 2, 1, plan);
  CHECK(replicas.micro_steps == 2);
  CHECK(replicas.bytes == 8000.0 + 2 * 4000.0 + 1000.0 + modes::kProcessBytes);
}

TEST_CASE("a split batch's host memory, from the plans of its micro-step and update") {
  const graph::TensorType vector{{1000}, graph::DType::f32};
  compiler::Plan micro;
  micro.graph.add_variable("w", vector, graph::VariableRole::parameter, {});
  micro.graph.add_variable("gradient/w", vector, graph::VariableRole::gradient_sum, {});
  micro.memory.persistent_bytes = 8000;
  micro.memory.peak_bytes = 11'000;  // 3,000 bytes of temporaries
  compiler::Plan update;
  update.graph.add_variable("w", vector, graph::VariableRole::parameter, {});
  update.graph.add_variable("w.moment", vector, graph::VariableRole::optimizer_state, {});
  update.graph.add_input("gradient/w", vector);
  update.memory.persistent_bytes = 12'000;
  update.memory.peak_bytes = 12'500;
  modes::HostBatch estimated;
  estimated.micro_batch = 1;
  estimated.micro_steps = 4;
  estimated.bytes = 1.0;
  estimated.data_bytes = 100.0;
  estimated.too_large = "a micro-step of 4 samples needs more";
  estimated.reason = estimated.too_large + "; 1 sample needs about 1 byte";
  // The micro-step holds neither the weights it reads nor the sums it adds to: the update does.
  modes::HostBatch one = modes::with_split_plans(estimated, micro, update, 1);
  CHECK(one.bytes == 12'500.0 + 3000.0 + 100.0 + modes::kProcessBytes);
  CHECK(one.micro_steps == 4);
  // Why the micro-batch is smaller says what the plans need.
  CHECK(one.reason == "a micro-step of 4 samples needs more; 1 sample needs about " +
                          storage::memory_size(one.bytes));
  // Several replicas add their sums up beside the update's inputs.
  modes::HostBatch two = modes::with_split_plans(estimated, micro, update, 2);
  CHECK(two.bytes == 12'500.0 + 3000.0 + 4000.0 + 100.0 + modes::kProcessBytes);
  // A micro-step that keeps its own sums (none of the update's inputs is named so) holds them.
  update.graph = {};
  update.graph.add_variable("w", vector, graph::VariableRole::parameter, {});
  CHECK(modes::with_split_plans(estimated, micro, update, 1).bytes ==
        12'500.0 + 7000.0 + 100.0 + modes::kProcessBytes);
}
