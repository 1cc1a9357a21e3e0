# lit configuration of llm-fuse's IR-level tests.
#
# Features:
#   ptxas        the CUDA toolkit's ptxas is present (cubin emission tests)
#   cuda-device  a CUDA driver and GPU are usable (llm-fuse-device-info
#                exits 0); GPU tests REQUIRE it and are reported UNSUPPORTED,
#                not failed, on machines without one.
import os
import shutil
import subprocess

import lit.formats

config.name = "llm-fuse"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lf_obj_root, "lit_tests")

# Our tools first, then LLVM's (FileCheck, not, split-file, count).
config.environment["PATH"] = os.pathsep.join(
    [config.lf_tools_dir, config.llvm_tools_dir, config.environment["PATH"]])
# Tests must not depend on the caller's logging or keys.
for var in ["LLM_FUSE_LOG", "OPENAI_API_KEY", "LLM_FUSE_REPLAY_DIR",
            "LLM_FUSE_PROMPTS_DIR"]:
    config.environment.pop(var, None)
# Nor write into the caller's kernel cache: the default cache-dir of every
# test that does not name one lives in the build tree.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.lf_obj_root,
                                                    "lit_tests", "xdg-cache")

plugin = os.path.join(config.lf_lib_dir, "libLLMFusePlugin.so")
config.substitutions.append(("%llm_fuse_opt",
                             os.path.join(config.lf_tools_dir, "llm-fuse-opt")))
config.substitutions.append(("%mlir_opt", config.mlir_opt))
config.substitutions.append(("%lf_swap_tool",
                             os.path.join(config.lf_obj_root, "passes",
                                          "lf_swap_tool")))
config.substitutions.append(("%plugin", plugin))
config.substitutions.append(("%python", "python3"))
config.substitutions.append(("%lf_src", config.lf_src_root))
config.substitutions.append(("%lf_obj", config.lf_obj_root))
config.substitutions.append(("%lf_tools", config.lf_tools_dir))

# ptxas: MLIR's NVVM target finds it through CUDA_HOME.
if config.ptxas and os.access(config.ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.environment["CUDA_HOME"] = os.path.dirname(
        os.path.dirname(config.ptxas))
    config.substitutions.append(("%ptxas", config.ptxas))

# cuda-device: ask the same loader the runtime uses.
probe = os.path.join(config.lf_tools_dir, "llm-fuse-device-info")
env = dict(os.environ)
try:
    rc = subprocess.run([probe, "--quiet"], env=env, timeout=60,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
except (OSError, subprocess.TimeoutExpired):
    rc = 1
if rc == 0:
    config.available_features.add("cuda-device")
lit_config.note("llm-fuse features: ptxas=%s cuda-device=%s" % (
    "ptxas" in config.available_features,
    "cuda-device" in config.available_features))
