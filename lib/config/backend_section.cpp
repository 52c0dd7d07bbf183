#include "param_types.hpp"
#include "trainer_sections.hpp"

namespace csrun::config {

namespace {

using T = ValueType;

const Schema& cluster_config_schema() {
  static const Schema schema(
      "cluster_config", {
                            default_field("num_csx", positive_integer(), value(1)),
                            default_field("num_workers_per_csx", non_negative_integer(), value(1)),
                            optional_field("max_wgt_servers", non_negative_integer()),
                            optional_field("max_act_per_csx", non_negative_integer()),
                            optional_field("mgmt_address", T::string().or_null()),
                            optional_field("mgmt_namespace", T::string().or_null()),
                            optional_field("credentials_path", T::string().or_null()),
                            optional_field("mount_dirs", T::list_of(T::string())),
                            optional_field("python_paths", T::list_of(T::string())),
                            optional_field("cbcore_image", T::string().or_null()),
                            optional_field("job_labels", T::list_of(T::string())),
                            optional_field("job_priority", T::choice({"p1", "p2", "p3"})),
                            optional_field("job_time_sec", positive_integer().or_null()),
                            optional_field("disable_version_check", T::boolean()),
                        });
  return schema;
}

const Schema& backend_schema() {
  static const Schema schema(
      "backend",
      {
          optional_field("backend_type", T::string()),
          optional_field("compile_dir", T::string().or_null()),
          default_field("compile_only", T::boolean(), value(false)),
          default_field("validate_only", T::boolean(), value(false)),
          default_field("execution_mode", T::choice({"auto", "pipelined", "weight_streaming"}),
                        value("auto")),
          optional_field("cluster_config", T::mapping()),
          optional_field("enable_distributed", T::boolean()),
          optional_field("main_process_id", non_negative_integer()),
          optional_field("dist_addr", T::string()),
          optional_field("dist_backend", T::choice({"nccl", "mpi", "gloo"})),
          optional_field("init_method", T::string()),
          optional_field("sync_batchnorm", T::boolean()),
      });
  return schema;
}

std::optional<Device> parse_device(const Node& value, Diagnostics& diagnostics) {
  if (value.is_string()) {
    if (value.as_string() == "CSX") return Device::csx;
    if (value.as_string() == "CPU") return Device::cpu;
    if (value.as_string() == "GPU") return Device::gpu;
  }
  std::string shown = value.is_string() ? value.as_string() : value.render();
  diagnostics.error(value.mark(), value.path(),
                    "Invalid device type: " + shown + ". Expected one of {'CSX', 'CPU', 'GPU'}.");
  return std::nullopt;
}

ClusterConfig read_cluster(const Node& cluster, Diagnostics& diagnostics) {
  Node checked = cluster_config_schema().check(cluster, diagnostics);
  ClusterConfig result;
  if (const Node* num_csx = checked.find("num_csx")) result.num_csx = num_csx->as_int();
  if (const Node* workers = checked.find("num_workers_per_csx")) {
    result.num_workers_per_csx = workers->as_int();
  }
  return result;
}

}  // namespace

std::optional<Node> checked_section(const Node* section, const Schema& schema,
                                    Diagnostics& diagnostics) {
  if (!section || section->is_null()) return std::nullopt;
  if (!section->is_map()) {
    diagnostics.error(
        section->mark(), section->path(),
        "expected a mapping of " + schema.name() + " keys; found " + section->describe());
    return std::nullopt;
  }
  return schema.check(*section, diagnostics);
}

BackendSpec read_backend(const Node& init, Diagnostics& diagnostics) {
  BackendSpec spec;
  const Node* device = init.find("device");
  const Node* backend_node = init.find("backend");
  if (device && !device->is_null() && backend_node && !backend_node->is_null()) {
    diagnostics.error(backend_node->mark(), backend_node->path(),
                      "backend and device are mutually exclusive arguments of Trainer. Please "
                      "only provide one or the other");
  }
  std::optional<Node> backend = checked_section(backend_node, backend_schema(), diagnostics);
  const Node* type = device && !device->is_null() ? device
                     : backend                    ? backend->find("backend_type")
                                                  : nullptr;
  if (type) {
    if (auto parsed = parse_device(*type, diagnostics)) spec.device = *parsed;
  } else {
    spec.device_defaulted = true;
  }
  if (!backend) return spec;
  if (const Node* dir = backend->find("compile_dir"); dir && dir->is_string()) {
    spec.compile_dir = dir->as_string();
  }
  std::string mode = backend->find("execution_mode")->as_string();
  spec.execution_mode = mode == "pipelined"          ? ExecutionMode::pipelined
                        : mode == "weight_streaming" ? ExecutionMode::weight_streaming
                                                     : ExecutionMode::automatic;
  spec.compile_only = backend->find("compile_only")->as_bool();
  spec.validate_only = backend->find("validate_only")->as_bool();
  if (spec.compile_only && spec.validate_only) {
    diagnostics.error(backend->mark(), backend->path(),
                      "Please set one of compile_only and validate_only");
  }
  if (const Node* cluster = backend->find("cluster_config")) {
    spec.cluster = read_cluster(*cluster, diagnostics);
  }
  return spec;
}

}  // namespace csrun::config
