package server_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A skill is a directory with a SKILL.md: every file is a resource, and
// skills/get answers with the frontmatter and the digests of the files.
func ExampleServer_AddSkill() {
	srv := server.New()
	err := srv.AddSkill(server.Skill{
		Path: "acme/greeting",
		FS: fstest.MapFS{
			"SKILL.md":        {Data: []byte("---\nname: greeting\ndescription: Greet politely\n---\nSay hello.\n")},
			"examples/hi.txt": {Data: []byte("hi\n")},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	res, _ := c.Call("skills/get", map[string]any{"uri": "skill://acme/greeting/SKILL.md"})
	fmt.Println(string(res))
	fmt.Printf("%q\n", c.ReadResource("skill://acme/greeting/examples/hi.txt")[0].Text)
	// Output:
	// {"skill":{"uri":"skill://acme/greeting/SKILL.md","frontmatter":{"description":"Greet politely","name":"greeting"},"resources":[{"uri":"skill://acme/greeting/SKILL.md","digest":"sha256:e364dc671b0727ccefc98273be618069bf86e1d45f3900327d25869e3a2c11f3","size":62},{"uri":"skill://acme/greeting/examples/hi.txt","digest":"sha256:98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4","size":3}]},"resultType":"complete","ttlMs":0,"cacheScope":"private"}
	// "hi\n"
}

// A dynamic skill generates its files when they are read; its entry lists
// its resources as "dynamic", since no digest can hold.
func ExampleServer_AddSkill_dynamic() {
	srv := server.New()
	err := srv.AddSkill(server.Skill{
		Path:        "reports/daily",
		Frontmatter: "name: daily\ndescription: Today's report",
		Generate: func(_ context.Context, file string) ([]byte, error) {
			if file == "SKILL.md" {
				return []byte("Read today's figures.\n"), nil
			}
			return nil, server.ErrResourceNotFound
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	res, _ := c.Call("skills/list", nil)
	fmt.Println(string(res))
	fmt.Printf("%q\n", c.ReadResource("skill://reports/daily/SKILL.md")[0].Text)
	// Output:
	// {"skills":[{"uri":"skill://reports/daily/SKILL.md","frontmatter":{"description":"Today's report","name":"daily"},"resources":"dynamic"}],"resultType":"complete","ttlMs":0,"cacheScope":"private"}
	// "---\nname: daily\ndescription: Today's report\n---\nRead today's figures.\n"
}

// AddSkills serves every directory of an FS that holds a SKILL.md, at its
// path; RemoveSkills takes skills away again. resources/directory/read
// lists a skill's files and directories.
func ExampleServer_AddSkills() {
	srv := server.New()
	paths, err := srv.AddSkills(fstest.MapFS{
		"acme/billing/refunds/SKILL.md": {Data: []byte("---\nname: refunds\ndescription: Refund per policy\n---\n")},
		"git-workflow/SKILL.md":         {Data: []byte("---\nname: git-workflow\ndescription: Our Git conventions\n---\n")},
		"git-workflow/notes.txt":        {Data: []byte("rebase, never merge\n")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(paths)
	fmt.Println(srv.RemoveSkills("acme/billing/refunds"))
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	res, _ := c.Call("resources/directory/read", map[string]any{"uri": "skill://git-workflow"})
	fmt.Println(string(res))
	// Output:
	// [acme/billing/refunds git-workflow]
	// 1
	// {"resultType":"complete","resources":[{"uri":"skill://git-workflow/SKILL.md","name":"git-workflow","description":"Our Git conventions","mimeType":"text/markdown","size":60},{"uri":"skill://git-workflow/notes.txt","name":"notes.txt","mimeType":"text/plain","size":20}]}
}
