package runspec

import (
	"github.com/servebench/servebench/report"
)

// Files is the output section as report places files.
func (o *Output) Files() report.OutputOptions {
	return report.OutputOptions{
		SaveResult: o.SaveResult, SaveDetailed: o.SaveDetailed, AppendResult: o.AppendResult,
		ResultDir: o.ResultDir, ResultFilename: o.ResultFilename, Records: o.Records, SummaryJSON: o.SummaryJSON,
	}
}

// RunInfo describes a bench or sim run for the result block and JSON;
// both build it here so their results compare key for key. Credential
// metadata is masked.
func (s *Spec) RunInfo(backend, modelID, tokenizerID string, w ResolvedWorkload) (report.RunInfo, error) {
	metadata, err := s.Output.MetadataPairs()
	if err != nil {
		return report.RunInfo{}, err
	}
	info := report.RunInfo{
		Date: s.Env.now(), Backend: backend, EndpointType: backend, Label: s.Output.Label, ModelID: modelID, TokenizerID: tokenizerID,
		NumPrompts: w.Spec.NumPrompts, RequestRate: w.Arrivals.Rate, Burstiness: w.Arrivals.Burstiness,
		MaxConcurrency: s.Workload.MaxConcurrency, Metadata: metadata, PercentileMetrics: w.PercentileMetrics, Percentiles: w.Percentiles,
		Goodput: len(w.Summary.Goodput) > 0,
	}
	if a := w.Arrivals; a.RampUp != "" {
		info.RampUp = &report.RampUp{Strategy: a.RampUp, StartRPS: a.RampStart, EndRPS: a.RampEnd}
	}
	return info, nil
}
