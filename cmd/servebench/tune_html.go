package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/tune"
)

// writeStudyHTML writes --html, when given, from the stored trials.
func writeStudyHTML(out io.Writer, f *tuneFlags, trials []tune.Trial) error {
	if f.html == "" {
		return nil
	}
	var page bytes.Buffer
	if err := tune.StudyPage(f.study, trials, f.objective, f.paretoTTFT).Write(&page); err != nil {
		return err
	}
	if err := writeAtomic(f.html, page.Bytes(), true); err != nil {
		return fmt.Errorf("--html %s: %w", f.html, err)
	}
	fmt.Fprintf(out, "study page in %s\n", f.html)
	return nil
}

// reportStoredStudy is --report-only: the study as stored, no trial run.
func reportStoredStudy(ctx context.Context, out io.Writer, f *tuneFlags) error {
	if f.storage == "" {
		dir := f.dir
		if dir == "" {
			dir = "tune-" + f.study
		}
		f.storage = filepath.Join(dir, "study.db")
		if _, err := os.Stat(f.storage); err != nil {
			return fmt.Errorf("--report-only: no study at %s; give --storage", f.storage)
		}
	}
	store, err := tune.OpenStorage(ctx, f.storage)
	if err != nil {
		return err
	}
	defer store.Close()
	trials, err := store.Trials(ctx, f.study)
	if err != nil {
		return err
	}
	if len(trials) == 0 {
		return fmt.Errorf("--study %q: no trials in %s", f.study, store.URL)
	}
	if f.html == "" {
		return fmt.Errorf("--report-only needs --html FILE")
	}
	return writeStudyHTML(out, f, trials)
}
