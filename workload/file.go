package workload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/servebench/servebench/internal/option"
)

// datasetError carries a message written for the user while keeping the
// underlying error reachable through errors.Is/As.
type datasetError struct {
	msg string
	err error
}

func (e *datasetError) Error() string { return e.msg }
func (e *datasetError) Unwrap() error { return e.err }

// openDataset opens a dataset file, turning the usual mistakes into one-line
// errors that say what to pass instead.
func openDataset(path string) (*os.File, error) {
	return openFile(path, "dataset file", "dataset_path")
}

// openFile opens the file an option names, with one-line errors that call
// it what and name the option to fix.
func openFile(path, what, opt string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, option.Errorf("%s %q: no such file (pass {"+opt+"})", what, path).WithCause(err)
		}
		cause := err
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			cause = pathErr.Err
		}
		return nil, &datasetError{fmt.Sprintf("%s %q: %v", what, path, cause), err}
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &datasetError{fmt.Sprintf("%s %q: %v", what, path, err), err}
	}
	if info.IsDir() {
		f.Close()
		return nil, option.Errorf("%s %q: is a directory (pass a file to {"+opt+"})", what, path).WithCause(fs.ErrInvalid)
	}
	return f, nil
}
