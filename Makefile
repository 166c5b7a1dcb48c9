# The test command of README.md and .ci/run. Packages that embed the Temporal server (devserver, tests, the
# starter and the benchmarks) are tested without the race detector: their race build doubles a compile that
# already takes minutes cold. Every other package runs with -race.
HEAVY := /devserver|/tests|/cmd/starter|/benchmarks
PKGS  := $(shell go list ./...)
LIGHT := $(shell go list ./... | grep -Ev '$(HEAVY)')

.PHONY: test
test:
	go test -race $(LIGHT)
	go test $(filter-out $(LIGHT),$(PKGS))
