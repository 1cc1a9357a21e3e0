//===- pass_registration.cpp - C passes as registered MLIR passes ---------===//
//
// Hosts the lf_pass_def_t definitions of passes/ as real mlir::Pass objects:
// typed pass options built from the C option table (so --help shows them with
// descriptions and `llm-fuse{...}` parses them), validation through the C
// option code, and the run callback on the C API. No pass logic lives here.
//
//===----------------------------------------------------------------------===//

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mlir/CAPI/IR.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

extern "C" {
#include "base/log.h"
#include "dialect_bridge/bridge.h"
#include "passes/pass_def.h"
}

namespace {

/// Owns an initialized C options struct for the duration of a scope.
class COptions {
public:
  explicit COptions(const lf_pass_def_t *def)
      : def(def), storage((def->options_size + sizeof(std::max_align_t) - 1) /
                          sizeof(std::max_align_t)) {}
  ~COptions() {
    if (initialized)
      lf_pass_options_free(def, data());
  }
  lf_status_t init() {
    lf_status_t s = lf_pass_options_init(def, data());
    initialized = !s;
    return s;
  }
  void *data() { return storage.data(); }

private:
  const lf_pass_def_t *def;
  std::vector<std::max_align_t> storage;
  bool initialized = false;
};

/// What --help shows after '=' for an option of each type.
const char *valueName(lf_option_type_t type) {
  switch (type) {
  case LF_OPTION_INT:
    return "int";
  case LF_OPTION_DOUBLE:
    return "number";
  case LF_OPTION_BOOL:
    return "bool";
  case LF_OPTION_STRING:
    break;
  }
  return "string";
}

class CPass : public mlir::Pass {
public:
  explicit CPass(const lf_pass_def_t *def)
      : mlir::Pass(mlir::TypeID::getFromOpaquePointer(def),
                   llvm::StringRef(def->op_name)),
        def(def) {
    // Numbers travel as text: the C option code parses and range-checks
    // them, so both hosts give the same messages. Booleans stay booleans so
    // a bare `offline` works as a flag.
    for (size_t i = 0; i < def->num_options; ++i) {
      const lf_option_def_t &o = def->options[i];
      std::string &help = helpTexts.emplace_back(o.description);
      if (o.choices) {
        help += " (";
        for (const char *const *c = o.choices; *c; ++c)
          help += std::string(c == o.choices ? "" : "|") + *c;
        help += ")";
      }
      help += std::string(" [default: ") +
              (*o.default_text ? o.default_text : "none") + "]";
      llvm::cl::desc desc(help);
      if (o.type == LF_OPTION_BOOL) {
        bool value = false;
        // The table's defaults are covered by a unit test; a bad one reads
        // as false rather than aborting a user's build.
        std::string d = o.default_text;
        value = d == "true" || d == "1" || d == "on" || d == "yes";
        bools.emplace_back(&o, std::make_unique<Option<bool>>(
                                   *this, o.name, desc, llvm::cl::init(value),
                                   llvm::cl::value_desc("bool")));
      } else {
        texts.emplace_back(
            &o, std::make_unique<Option<std::string>>(
                    *this, o.name, desc,
                    llvm::cl::init(std::string(o.default_text)),
                    llvm::cl::value_desc(valueName(o.type))));
      }
    }
  }

  CPass(const CPass &other) : CPass(other.def) { copyOptionValuesFrom(&other); }

  llvm::StringRef getName() const override { return def->name; }
  llvm::StringRef getArgument() const override { return def->argument; }
  llvm::StringRef getDescription() const override { return def->description; }
  bool canScheduleOn(mlir::RegisteredOperationName) const override {
    return true; // restricted by op_name already
  }
  std::unique_ptr<mlir::Pass> clonePass() const override {
    return std::make_unique<CPass>(*this);
  }

  mlir::LogicalResult initializeOptions(
      llvm::StringRef options,
      llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler)
      override {
    // The C parser sees the text first: it knows every option's type, range
    // and choices, and names the known options when one is misspelt.
    COptions check(def);
    lf_status_t s = check.init();
    if (!s)
      s = lf_pass_options_parse(def, check.data(), options.str().c_str());
    if (s) {
      std::string message = lf_status_message(s);
      lf_status_free(s);
      return errorHandler(message);
    }
    if (mlir::failed(mlir::Pass::initializeOptions(options, errorHandler)))
      return mlir::failure();
    COptions c(def);
    s = fill(c);
    if (!s)
      return mlir::success();
    std::string message = lf_status_message(s);
    lf_status_free(s);
    return errorHandler(message);
  }

  void runOnOperation() override {
    COptions c(def);
    lf_status_t s = fill(c);
    const char *pre =
        (!s && def->pre_pipeline) ? def->pre_pipeline(wrap(getOperation()), c.data())
                                  : nullptr;
    if (pre) {
      mlir::OpPassManager pm(getOperation()->getName());
      std::string err;
      llvm::raw_string_ostream errs(err);
      if (mlir::failed(mlir::parsePassPipeline(pre, pm, errs)) ||
          mlir::failed(runPipeline(pm, getOperation())))
        s = LF_STATUS(LF_STATUS_INTERNAL, "%s: the pipeline '%s' failed%s%s",
                      def->argument, pre, err.empty() ? "" : ": ", err.c_str());
    }
    if (!s)
      s = def->run(wrap(getOperation()), c.data());
    if (s) {
      lf_emit_status(wrap(getOperation()->getLoc()), s);
      lf_status_free(s);
      signalPassFailure();
    }
  }

private:
  /// Builds the C options from the current option values, validating each
  /// through the C parser (types, choices, ranges).
  lf_status_t fill(COptions &c) const {
    LF_RETURN_IF_ERROR(c.init());
    for (auto &[o, opt] : texts)
      LF_RETURN_IF_ERROR(
          lf_pass_options_set(def, c.data(), o->name, opt->getValue().c_str()));
    for (auto &[o, opt] : bools)
      LF_RETURN_IF_ERROR(lf_pass_options_set(def, c.data(), o->name,
                                             opt->getValue() ? "true" : "false"));
    return LF_OK;
  }

  template <typename T>
  using Slot = std::pair<const lf_option_def_t *, std::unique_ptr<Option<T>>>;

  const lf_pass_def_t *def;
  std::deque<std::string> helpTexts; // stable storage for cl::desc
  std::vector<Slot<std::string>> texts;
  std::vector<Slot<bool>> bools;
};

} // namespace

extern "C" void lf_register_passes(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    lf_log_init_from_env();
    size_t count = 0;
    const lf_pass_def_t *const *defs = lf_all_passes(&count);
    for (size_t i = 0; i < count; ++i) {
      const lf_pass_def_t *def = defs[i];
      mlir::registerPass([def] { return std::make_unique<CPass>(def); });
    }
  });
}

extern "C" void lf_emit_diag(MlirLocation loc, lf_diag_severity_t severity,
                             const char *message) {
  mlir::Location l = unwrap(loc);
  switch (severity) {
  case LF_DIAG_ERROR:
    mlir::emitError(l) << message;
    break;
  case LF_DIAG_WARNING:
    mlir::emitWarning(l) << message;
    break;
  case LF_DIAG_REMARK:
    mlir::emitRemark(l) << message;
    break;
  }
}

extern "C" void lf_emit_status(MlirLocation loc, lf_status_t status) {
  if (!status)
    return;
  LF_LOG_DEBUG("error %s raised at %s:%d",
               lf_status_code_name(lf_status_code(status)),
               lf_status_file(status), lf_status_line(status));
  lf_emit_diag(loc, LF_DIAG_ERROR, lf_status_message(status));
}
