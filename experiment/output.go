package experiment

// DefaultOutputRoot is the directory runs are exported under when nothing names another: a run without an output
// directory of its own writes to DefaultOutputRoot/<run id>, relative to the working directory of the process that
// exports it (a worker without --output-root, the starter's embedded worker, `starter report`).
const DefaultOutputRoot = "out"
