// Command operatorcli is a stand-in for the temporal CLI in tests: the five `temporal operator` commands that
// deploy/temporal/scripts/bootstrap.sh runs, with the same flags, exit status (0 on success, 1 with "Error: ..."
// on stderr otherwise) and TEMPORAL_ADDRESS, each one call of the operator or workflow service. The real CLI
// builds in minutes against a server tree of its own; this builds in seconds from the SDK silico already pins,
// which is why CI runs the script with it (TEMPORAL_CLI names it).
//
//	operator cluster health
//	operator namespace describe --namespace NS
//	operator namespace create --namespace NS --retention 30d
//	operator search-attribute list --namespace NS
//	operator search-attribute create --namespace NS --name NAME --type Keyword
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 3 || args[0] != "operator" {
		return errors.New("usage: operator cluster health | operator namespace describe|create | operator search-attribute list|create")
	}
	cmd := args[1] + " " + args[2]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	ns := fs.String("namespace", "default", "namespace")
	retention := fs.String("retention", "72h", "retention of a new namespace: a Go duration or a number of days (30d)")
	name := fs.String("name", "", "search attribute name")
	typ := fs.String("type", "", "search attribute type (Keyword, Text, Int, ...)")
	if err := fs.Parse(args[3:]); err != nil {
		return err
	}
	addr := os.Getenv("TEMPORAL_ADDRESS")
	if addr == "" {
		addr = client.DefaultHostPort
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: *ns, Logger: quiet{}})
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer c.Close()

	switch cmd {
	case "cluster health":
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			return fmt.Errorf("health: %w", err)
		}
		fmt.Println("SERVING")
	case "namespace describe":
		d, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: *ns})
		if err != nil {
			return fmt.Errorf("describe namespace %s: %w", *ns, err)
		}
		fmt.Printf("%s\t%s\n", d.GetNamespaceInfo().GetName(), d.GetNamespaceInfo().GetState())
	case "namespace create":
		keep, err := days(*retention)
		if err != nil {
			return err
		}
		if _, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: *ns, WorkflowExecutionRetentionPeriod: durationpb.New(keep),
		}); err != nil {
			return fmt.Errorf("create namespace %s: %w", *ns, err)
		}
		fmt.Printf("Namespace %s successfully registered.\n", *ns)
	case "search-attribute list":
		resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: *ns})
		if err != nil {
			return fmt.Errorf("list search attributes of %s: %w", *ns, err)
		}
		var lines []string
		for _, m := range []map[string]enums.IndexedValueType{resp.GetSystemAttributes(), resp.GetCustomAttributes()} {
			for n, t := range m {
				lines = append(lines, n+"\t"+t.String())
			}
		}
		slices.Sort(lines)
		fmt.Println(strings.Join(lines, "\n"))
	case "search-attribute create":
		t, err := enums.IndexedValueTypeFromString(*typ)
		if err != nil || *name == "" {
			return fmt.Errorf("search-attribute create needs --name and a --type: %q, %q", *name, *typ)
		}
		if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: *ns, SearchAttributes: map[string]enums.IndexedValueType{*name: t},
		}); err != nil {
			return fmt.Errorf("create search attribute %s in %s: %w", *name, *ns, err)
		}
		fmt.Println("Search attributes have been added")
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

// days parses a Go duration or, as the temporal CLI accepts, a whole number of days ("30d").
func days(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("retention %q: %w", s, err)
		}
		return time.Duration(d) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("retention %q: %w", s, err)
	}
	return d, nil
}

// quiet drops the SDK client's log lines: the commands print only their result or error.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
