package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/lessim/lessim/internal/atomicfile"
	"github.com/lessim/lessim/internal/plural"
	"github.com/lessim/lessim/internal/pqsafe"
	"github.com/lessim/lessim/internal/textin"
)

// Files of a results folder besides its parts.
const (
	ManifestFile = "manifest.json"
	ConfigFile   = "sweep.yaml"
)

// Manifest is a results folder's manifest.json: which sweep its parts belong
// to and in which format. Every shard writing to the folder checks it.
type Manifest struct {
	// FormatVersion is the results format (FormatVersion).
	FormatVersion int `json:"format_version"`
	// SweepID is the hash of the expanded grid's point ids in order: two
	// sweep files with the same points have the same id.
	SweepID string `json:"sweep_id"`
	// Points is the number of points in the grid (all shards).
	Points int `json:"points"`
	// LessimVersion is the version that created the folder.
	LessimVersion string `json:"lessim_version"`
	// Grid is the name of the sweep file that created the folder.
	Grid string `json:"grid"`
}

// partRE matches a part's file name: part-<shard>-of-<shards>-<seq>.parquet.
var partRE = regexp.MustCompile(`^part-(\d+)-of-(\d+)-(\d+)\.parquet$`)

// partPrefix starts every part's file name.
const partPrefix = "part-"

// partName is the file name of a shard's seq-th part.
func partName(shard, shards, seq int) string {
	return fmt.Sprintf(partPrefix+"%d-of-%d-%05d.parquet", shard, shards, seq)
}

// Parts lists the result parts in dir, sorted by name.
func Parts(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && partRE.MatchString(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// ReadManifest reads dir's manifest; it returns fs.ErrNotExist when dir has none.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := textin.ReadFile(filepath.Join(dir, ManifestFile), "sweep manifest", 1<<20, nil)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %w (lessim sweep writes it; was it edited? use a new --out folder)", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// sweepIDRE matches a sweep id (SweepID).
var sweepIDRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// check lists every field of m that lessim could not have written.
func (m *Manifest) check() error {
	var probs []string
	if m.FormatVersion < 1 {
		probs = append(probs, fmt.Sprintf("format_version %d (missing or not positive)", m.FormatVersion))
	}
	if !sweepIDRE.MatchString(m.SweepID) {
		probs = append(probs, fmt.Sprintf("sweep_id %q (want 16 hex digits)", m.SweepID))
	}
	if m.Points < 1 {
		probs = append(probs, fmt.Sprintf("points %d (want at least 1)", m.Points))
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// prepareFolder checks that dir (created by the caller) is writable and that
// any results already in it belong to the same sweep in the same format, and
// writes the manifest and config when absent. It returns the points already
// finished there, by id.
func prepareFolder(dir string, want Manifest, config []byte, configPath string) (done map[string]doneRow, err error) {
	probe, err := os.CreateTemp(dir, ".lessim-write-check-*")
	if err != nil {
		return nil, fmt.Errorf("results folder %s is not writable: %w", dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	parts, err := Parts(dir)
	if err != nil {
		return nil, err
	}
	have, err := ReadManifest(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if len(parts) > 0 {
			return nil, fmt.Errorf("results folder %s has %d result parts but no %s: refusing to add to results of unknown origin (use a new --out folder)", dir, len(parts), ManifestFile)
		}
		if config != nil {
			if err := checkConfigPath(dir, configPath); err != nil {
				return nil, err
			}
			if err := atomicfile.WriteFile(filepath.Join(dir, ConfigFile), config); err != nil {
				return nil, err
			}
		}
		js, _ := json.MarshalIndent(want, "", "  ")
		if err := atomicfile.WriteFile(filepath.Join(dir, ManifestFile), append(js, '\n')); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if err := checkManifest(dir, have, &want); err != nil {
			return nil, err
		}
	}
	done = map[string]doneRow{}
	for _, p := range parts {
		rows, err := readPart(p, want.SweepID)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if d, ok := done[r.id]; ok {
				return nil, fmt.Errorf("results folder %s %w: point_id %s is in %s and in %s (a copied part, or two runs into one folder): delete one of them",
					dir, ErrDuplicatePoint, r.id, d.part, p)
			}
			done[r.id] = doneRow{err: r.err, part: p}
		}
	}
	return done, nil
}

// Errors of a results folder shared by mistake.
var (
	// ErrDuplicatePoint is a results folder holding a point twice.
	ErrDuplicatePoint = errors.New("holds a point twice")
	// ErrFolderBusy is a results folder another run is writing the same
	// points into (lockFolder).
	ErrFolderBusy = errors.New("busy")
)

// checkConfigPath refuses a sweep file that is the sweep.yaml a new
// results folder dir gets (a path, a link or another spelling of it): writing
// it would replace the user's file with the resolved sweep.
func checkConfigPath(dir, configPath string) error {
	if err := atomicfile.CheckDistinct(filepath.Join(dir, ConfigFile), configPath); err != nil {
		return fmt.Errorf("sweep file %s is the %s that the new results folder %s gets: refusing to overwrite it (keep the sweep file outside --out, or use another --out)",
			configPath, ConfigFile, dir)
	}
	return nil
}

// checkManifest refuses a folder written in another format or by another grid.
func checkManifest(dir string, have, want *Manifest) error {
	if have.FormatVersion != want.FormatVersion {
		return fmt.Errorf("results folder %s was written in results format %d (lessim %s); this lessim writes format %d: use a new --out folder",
			dir, have.FormatVersion, have.LessimVersion, want.FormatVersion)
	}
	if have.SweepID != want.SweepID {
		return fmt.Errorf("results folder %s holds another sweep (%s, %s, id %s); %s expands to %s, id %s: use a new --out folder",
			dir, have.Grid, plural.Count(have.Points, "point"), have.SweepID, want.Grid, plural.Count(want.Points, "point"), want.SweepID)
	}
	if have.Points != want.Points {
		return fmt.Errorf("%s: says sweep %s has %s; it has %d (was the manifest edited?): use a new --out folder",
			filepath.Join(dir, ManifestFile), have.SweepID, plural.Count(have.Points, "point"), want.Points)
	}
	return nil
}

// nextSeq is one more than the highest part number of shard i/n in dir.
func nextSeq(dir string, shard, shards int) (int, error) {
	parts, err := Parts(dir)
	if err != nil {
		return 0, err
	}
	seq := 0
	for _, p := range parts {
		m := partRE.FindStringSubmatch(filepath.Base(p))
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		s, _ := strconv.Atoi(m[3])
		if i == shard && n == shards {
			seq = max(seq, s)
		}
	}
	return seq + 1, nil
}

// doneRow is a point found in a part: its error ("" when it ran) and the
// part holding it.
type doneRow struct {
	err, part string
}

// partRow is what a resumed sweep needs of a row already written.
type partRow struct {
	id, err string // point_id and error columns
}

// readPart reads a part whole, checking its format and sweep, and returns
// each row's point id and error. A part that cannot be read whole is
// refused: its points must not count as finished.
func readPart(path, sweepID string) (rows []partRow, err error) {
	defer func() {
		if recover() != nil {
			rows, err = nil, pqsafe.Recovered(path)
		}
		if err != nil {
			err = fmt.Errorf("%w (delete the part and rerun: its points run again)", err)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := pqsafe.Open(f, path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	if err := checkPartMeta(path, pf.MetaData().KeyValueMetadata(), sweepID); err != nil {
		return nil, err
	}
	// NB: every column is read, not only point_id: a part whose other
	// pages are corrupt would otherwise count as finished here and fail
	// every report.
	tbl, err := pqsafe.ReadTable(pf, path, 4096)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	return partRows(path, tbl)
}

// checkPartMeta checks a part's results format and sweep id.
func checkPartMeta(path string, kv metadata.KeyValueMetadata, sweepID string) error {
	if v := kv.FindValue(FormatKey); v == nil || *v != strconv.Itoa(FormatVersion) {
		got := "none"
		if v != nil {
			got = *v
		}
		return fmt.Errorf("%s: results format %s, this lessim reads format %d: use a new --out folder", path, got, FormatVersion)
	}
	if v := kv.FindValue(SweepKey); v == nil || *v != sweepID {
		return fmt.Errorf("%s: belongs to another sweep than the folder's manifest", path)
	}
	return nil
}

// partRows takes the point_id and error columns of a part's table.
func partRows(path string, tbl arrow.Table) ([]partRow, error) {
	ids, err := stringColumn(tbl, "point_id")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	errs, err := stringColumn(tbl, "error")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rows := make([]partRow, len(ids))
	for i := range rows {
		rows[i] = partRow{id: ids[i], err: errs[i]}
	}
	return rows, nil
}

// stringColumn is the values of tbl's string column name.
func stringColumn(tbl arrow.Table, name string) ([]string, error) {
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no %s column", name)
	}
	var out []string
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		a, ok := chunk.(*array.String)
		if !ok {
			return nil, fmt.Errorf("%s is not a string column", name)
		}
		for i := range a.Len() {
			out = append(out, a.Value(i))
		}
	}
	return out, nil
}
