package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/option"
	"github.com/servebench/servebench/metrics"
)

// ErrInterrupted marks a run stopped by its context (Ctrl-C) after what
// it measured was printed and saved; a CLI exits 130 for it.
var ErrInterrupted = errors.New("interrupted")

// interruptedError is an error that also is ErrInterrupted, keeping its
// own message.
type interruptedError struct{ err error }

func (e interruptedError) Error() string        { return e.err.Error() }
func (e interruptedError) Unwrap() error        { return e.err }
func (e interruptedError) Is(target error) bool { return target == ErrInterrupted }

// Interrupted marks err as the error of an interrupted run: errors.Is
// finds ErrInterrupted, and the message stays err's.
func Interrupted(err error) error {
	if err == nil || errors.Is(err, ErrInterrupted) {
		return err
	}
	return interruptedError{err}
}

// maxErrorRows bounds the error breakdown; the rest are summed in one row.
const maxErrorRows = 10

// WriteErrorSection prints the failed requests by reason (the HTTP status
// is part of the reason) with their counts, most frequent first, for any
// run with failures.
func WriteErrorSection(w io.Writer, s *metrics.Summary) error {
	if s.Failed == 0 || len(s.Errors) == 0 {
		return nil
	}
	reasons := sortedReasons(s.Errors)
	var rows [][2]string
	other := 0
	for i, r := range reasons {
		if i >= maxErrorRows {
			other += s.Errors[r]
			continue
		}
		rows = append(rows, [2]string{r, strconv.Itoa(s.Errors[r])})
	}
	if other > 0 {
		rows = append(rows, [2]string{fmt.Sprintf("(%d other reasons)", len(reasons)-maxErrorRows), strconv.Itoa(other)})
	}
	return WriteSection(w, "Failed Requests by Reason", rows)
}

func sortedReasons(errs map[string]int) []string {
	reasons := make([]string, 0, len(errs))
	for r := range errs {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		return cmp.Or(cmp.Compare(errs[b], errs[a]), strings.Compare(a, b))
	})
	return reasons
}

// Outcome maps how a run ended to its error, after everything measured
// was printed and saved: interrupted (ErrInterrupted), a records write
// error, or no request succeeded; nil for a run that went through.
func Outcome(s *metrics.Summary, interrupted bool, notSent int, sinkErr error, saved []string) error {
	where := "printed"
	if len(saved) > 0 {
		where = "printed and saved to " + strings.Join(saved, ", ")
	}
	switch {
	case interrupted:
		return Interrupted(fmt.Errorf("interrupted: partial results %s (%d requests never sent)", where, notSent))
	case sinkErr != nil:
		return option.Errorf("the run stopped early because a record could not be written (%w): results of the %d requests measured %s; free space or choose another {records} path",
			sinkErr, s.Completed+s.Failed, where)
	case s.Completed == 0 && s.Failed > 0:
		top := sortedReasons(s.Errors)
		return fmt.Errorf("no request succeeded: %d failed, most with %q", s.Failed, top[0])
	}
	return nil
}

// WriteMerged prints a merged run like a bench result, with a section on
// the shards, and saves what o asks for; the merged records file holds
// every record in global index order. label and metadata, when given,
// override and extend the shards'.
func WriteMerged(out, errw io.Writer, o OutputOptions, label string, metadata [][2]string, merged *Merged) error {
	result := merged.Result
	if label != "" {
		result.Info.Label = label
	}
	result.Info.Metadata = append(result.Info.Metadata, metadata...)
	files, err := OpenFiles(o, &result.Info)
	if err != nil {
		return err
	}
	defer files.Close()
	if err := WriteText(out, result); err != nil {
		return err
	}
	if err := WriteErrorSection(out, &result.Summary); err != nil {
		return err
	}
	title := fmt.Sprintf("Shards (%d, schedule %.19s…)", len(merged.Shards), merged.ScheduleHash)
	if merged.ScheduleHash == "" {
		title = fmt.Sprintf("Records files (%d)", len(merged.Shards))
	}
	if err := WriteSection(out, title, merged.ShardRows()); err != nil {
		return err
	}
	var recordsErr error
	if w := files.RecordsWriter(); w != nil {
		jw := metrics.NewBufferedJSONLWriter(w, 1<<20)
		for i := range result.Records {
			if recordsErr = jw.Add(&result.Records[i]); recordsErr != nil {
				break
			}
		}
		if err := jw.Close(); recordsErr == nil {
			recordsErr = err
		}
		fmt.Fprintf(errw, "Merged records: %s\n", files.RecordsPath)
	}
	if err := files.Write(out, errw, result); err != nil {
		return err
	}
	return Outcome(&result.Summary, result.Info.Interrupted, 0, recordsErr, files.SavedPaths(recordsErr == nil))
}
