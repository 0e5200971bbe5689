package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// sampleSkills is the sample skill set (the skills extension): a skill
// under a nested prefix with a script and an example, and one with a
// template directory holding a binary file.
//
//go:embed testdata/skills
var sampleSkills embed.FS

// dailyReportURI is the SKILL.md of the unlisted dynamic skill: skills/get
// and resources/read serve it, skills/list does not list it, so that the
// listing holds only skills with digests.
const dailyReportURI = "skill://reports/daily/SKILL.md"

// addSkills registers the sample skills and an unlisted dynamic one.
func addSkills(s *server.Server) error {
	sub, err := fs.Sub(sampleSkills, "testdata/skills")
	if err != nil {
		return err
	}
	if _, err := s.AddSkills(sub); err != nil {
		return err
	}
	return s.AddSkill(server.Skill{
		Path:        "reports/daily",
		Frontmatter: "name: daily\ndescription: Assemble today's operational report from live data",
		Unlisted:    true,
		Generate: func(ctx context.Context, file string) ([]byte, error) {
			switch file {
			case "SKILL.md":
				return []byte("# Daily report\n\nRead `data/today.csv`: it is generated when read.\n"), nil
			case "data/today.csv":
				day := time.Now().UTC().Format(time.DateOnly)
				return fmt.Appendf(nil, "day,requests\n%s,42\n", day), nil
			}
			return nil, errors.Join(server.ErrResourceNotFound, ctx.Err())
		},
	})
}
