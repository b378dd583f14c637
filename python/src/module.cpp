// SPDX-FileCopyrightText: 2026 flashoptim authors
// SPDX-License-Identifier: Apache-2.0
//
// flashoptim_kernels._core: the compiled half of the Python package. One
// class (Optimizer) over every compiled configuration, built by make();
// the torch.optim classes (flashoptim_kernels/optim.py) sit on top of it.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/unique_ptr.h>

#include "binding.hpp"
#if defined(FLASHOPTIM_PY_CUDA)
#include "cuda_binding.hpp"
#endif

namespace nb = nanobind;
namespace fp = flashoptim::python;

namespace {

const fp::registry& cpu_registry() {
  static const fp::registry r = [] {
    fp::registry x;
    fp::register_bf16_int8(x);
    fp::register_fp32(x);
    fp::register_bf16_fp32_master(x);
    return x;
  }();
  return r;
}

#if defined(FLASHOPTIM_PY_CUDA)
const fp::device_registry& cuda_registry() {
  static const fp::device_registry r = [] {
    fp::device_registry x;
    fp::register_cuda(x);
    return x;
  }();
  return r;
}
#endif

std::vector<std::string> configurations(const std::string& device) {
  std::vector<std::string> out;
  if (device == "cpu") {
    for (const auto& kv : cpu_registry()) out.push_back(kv.first);
#if defined(FLASHOPTIM_PY_CUDA)
  } else if (device == "cuda") {
    for (const auto& kv : cuda_registry()) out.push_back(kv.first);
#endif
  } else if (device != "cuda") {
    throw nb::value_error(("device must be 'cpu' or 'cuda', not '" + device + "'").c_str());
  }
  return out;
}

template <class Registry>
std::string known_names(const Registry& r) {
  std::string known;
  for (const auto& kv : r) known += (known.empty() ? "" : ", ") + kv.first;
  return known;
}

std::unique_ptr<fp::opt_base> make(const std::string& config, const nb::list& groups, std::uint64_t seed,
                                   const std::string& lr_check, int threads, const std::string& device,
                                   std::uintptr_t stream) {
  if (device != "cpu" && device != "cuda")
    throw nb::value_error(("device must be 'cpu' or 'cuda', not '" + device + "'").c_str());
#if !defined(FLASHOPTIM_PY_CUDA)
  if (device == "cuda")
    throw nb::value_error("device 'cuda': this build steps CPU arrays only (built without CUDA: nvcc was not found "
                          "or FLASHOPTIM_PYTHON_CUDA was OFF)");
#endif
  std::vector<fp::group_arg> gs;
  for (nb::handle g : groups) {
    nb::tuple t;
    if (!nb::try_cast(g, t) || t.size() != 2)
      throw nb::type_error("groups: each group is (list of (param, grad or None[, name]), hyperparameter dict)");
    fp::group_arg a;
    if (!nb::try_cast(t[0], a.params) || !nb::try_cast(t[1], a.hyper))
      throw nb::type_error("groups: each group is (list of (param, grad or None[, name]), hyperparameter dict)");
    gs.push_back(std::move(a));
  }
  fp::options_arg o;
  o.seed = seed;
  o.lr_check = lr_check;
  o.threads = threads;
#if defined(FLASHOPTIM_PY_CUDA)
  if (device == "cuda") {
    const auto& r = cuda_registry();
    const auto it = r.find(config);
    if (it == r.end())
      throw nb::value_error(("configuration '" + config + "' is not compiled in for CUDA (compiled: " +
                             known_names(r) + ")")
                                .c_str());
    return std::make_unique<fp::cuda_opt>(config, it->second(), gs, o, stream);
  }
#endif
  (void)stream;
  const auto& r = cpu_registry();
  const auto it = r.find(config);
  if (it == r.end())
    throw nb::value_error(("configuration '" + config + "' is not compiled in (compiled: " + known_names(r) + ")")
                              .c_str());
  return it->second(gs, o);
}

const fp::state_codec_ops& codec_of(const std::string& config) {
  const auto& r = cpu_registry();  // add_cpu fills the codec table
  const auto it = fp::state_codecs().find(config);
  if (it == fp::state_codecs().end())
    throw nb::value_error(("configuration '" + config + "' is not compiled in (compiled: " + known_names(r) + ")")
                              .c_str());
  return it->second;
}

nb::dict decode_states(const std::string& config, const nb::dict& states, std::int64_t n) {
  return codec_of(config).decode(states, n);
}

nb::dict encode_states(const std::string& config, const nb::dict& values, std::int64_t n) {
  return codec_of(config).encode(values, n);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "flashoptim kernels: the owning optimizer over numpy/torch arrays (DLPack)";
  m.attr("__version__") = FLASHOPTIM_PY_VERSION;
#if defined(FLASHOPTIM_PY_CUDA)
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  nb::exception<fp::status_error>(m, "FlashoptimError", PyExc_ValueError);
  m.def("configurations", &configurations, nb::arg("device") = "cpu",
        "The configurations compiled for `device`, 'rule/master/states'.");
  m.def("make", &make, nb::arg("config"), nb::arg("groups"), nb::arg("seed") = 0, nb::arg("lr_check") = "report",
        nb::arg("threads") = 0, nb::arg("device") = "cpu", nb::arg("stream") = 0,
        "An optimizer of configuration `config` over `groups`: a list of (tensors, hyperparameters), tensors a "
        "list of (param, grad or None[, name]).");

  m.def("decode_states", &decode_states, nb::arg("config"), nb::arg("states"), nb::arg("n"),
        "A tensor's stored states (Optimizer.state(i)'s 'stateK' / 'stateK_scales' bytes, CPU or CUDA) of "
        "configuration `config` decoded to float32 arrays of n elements, {'stateK': array}.");
  m.def("encode_states", &encode_states, nb::arg("config"), nb::arg("values"), nb::arg("n"),
        "The inverse of decode_states: float32 arrays of n elements {'stateK': array} -> the stored bytes "
        "(for Optimizer.set_state).");

  nb::class_<fp::opt_base>(m, "Optimizer")
      .def_prop_ro("config", &fp::opt_base::config)
      .def_prop_ro("device", &fp::opt_base::device)
      .def("set_stream", &fp::opt_base::set_stream, nb::arg("stream"),
           "The CUDA stream (an integer handle, e.g. torch.cuda.current_stream().cuda_stream) later calls use")
      .def_prop_ro("group_count", &fp::opt_base::group_count)
      .def_prop_ro("tensor_count", &fp::opt_base::tensor_count)
      .def_prop_ro("names", &fp::opt_base::names)
      .def_prop_ro("tensor_group", &fp::opt_base::tensor_group)
      .def("hyper", &fp::opt_base::hyper, nb::arg("group"))
      .def("set_hyper", &fp::opt_base::set_hyper, nb::arg("group"), nb::arg("hyper"))
      .def("set_lr", &fp::opt_base::set_lr, nb::arg("group"), nb::arg("lr"))
      .def("set_grad", &fp::opt_base::set_grad, nb::arg("tensor"), nb::arg("grad").none())
      .def("step_counts", &fp::opt_base::step_counts)
      .def("set_step_counts", &fp::opt_base::set_step_counts, nb::arg("counts"))
      .def("step", &fp::opt_base::step, nb::arg("inv_grad_scale") = 1.0)
      .def("step_grad_pass", &fp::opt_base::step_grad_pass, nb::arg("max_norm"), nb::arg("scaler"),
           nb::arg("control"))
      .def("begin_step", &fp::opt_base::begin_step, nb::arg("inv_grad_scale") = 1.0)
      .def("step_tensor", &fp::opt_base::step_tensor, nb::arg("tensor"))
      .def("end_step", &fp::opt_base::end_step)
      .def_prop_ro("in_release_step", &fp::opt_base::in_release_step)
      .def("state", &fp::opt_base::state, nb::arg("tensor"))
      .def("set_state", &fp::opt_base::set_state, nb::arg("tensor"), nb::arg("state"))
      .def("memory", &fp::opt_base::memory)
      .def("memory_string", &fp::opt_base::memory_string)
      .def("lr_report", &fp::opt_base::lr_report)
      .def("step_and_compare_serial", &fp::opt_base::step_and_compare_serial)
      .def("fp32_param", &fp::opt_base::fp32_param, nb::arg("tensor"))
      .def("set_fp32_param", &fp::opt_base::set_fp32_param, nb::arg("tensor"), nb::arg("weights"));
}
