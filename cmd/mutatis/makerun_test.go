package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// `make run` prints the next step before serving: a review command whose
// flags this CLI has and whose object exists, against the address and CA
// directory that `make run` serves with (the review defaults).
func TestMakeRunPrintsAWorkingReviewCommand(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	target := regexp.MustCompile(`(?ms)^run: build\n(.*?)\n\n`).FindSubmatch(mk)
	if target == nil {
		t.Fatal("the Makefile has no run target")
	}
	recipe := string(target[1])
	m := regexp.MustCompile(`@echo "\s*\$\(BIN\) (review [^"]*)"`).FindStringSubmatch(recipe)
	if m == nil {
		t.Fatalf("make run prints no review command:\n%s", recipe)
	}
	serve := strings.Index(recipe, " serve ")
	if serve < 0 || strings.Index(recipe, m[0]) > serve {
		t.Fatalf("the review command is not printed before serve starts:\n%s", recipe)
	}
	args := strings.Fields(m[1])
	cmd, flags, err := newRootCommand(nil, nil, nil).Find(args)
	if err != nil || cmd.Name() != "review" {
		t.Fatalf("%q: %v", m[1], err)
	}
	if err := cmd.ParseFlags(flags); err != nil {
		t.Fatalf("%q: %v", m[1], err)
	}
	file, _ := cmd.Flags().GetString("filename")
	if _, err := os.Stat("../../" + file); err != nil {
		t.Errorf("the object %s: %v", file, err)
	}
	server, _ := cmd.Flags().GetString("server")
	ca, _ := cmd.Flags().GetString("ca")
	if !strings.Contains(recipe, "--listen 127.0.0.1:8443") || server != "https://127.0.0.1:8443/mutate" ||
		!strings.Contains(recipe, "--self-signed-dir .run/certs") || ca != ".run/certs/ca.crt" {
		t.Errorf("review would call %s with CA %s; make run serves:\n%s", server, ca, recipe)
	}
}
