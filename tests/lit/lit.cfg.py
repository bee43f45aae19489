# lit configuration for the text tests: every .ir / .trace file here with a RUN line.
import os
import lit.formats

config.name = "fp8cc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir", ".trace", ".test"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.substitutions.append(("%fp8cc", config.fp8cc))
config.substitutions.append(("%fp8run", config.fp8run))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%ptxas", os.path.join(config.cuda_root, "bin", "ptxas")))
config.substitutions.append(("%examples", config.traces))
config.substitutions.append(("%real", os.path.join(config.source_root, "tests", "real")))
config.substitutions.append(("%{root}", config.source_root))
config.substitutions.append(("%inputs", os.path.join(os.path.dirname(__file__), "Inputs")))
config.environment["PATH"] = os.pathsep.join([config.llvm_bindir, os.environ.get("PATH", "")])
# fp8cc finds libdevice in $CUDA_HOME: the toolkit CMake was given
config.environment["CUDA_HOME"] = config.cuda_root
config.substitutions.append(("%cuda_root", config.cuda_root))
