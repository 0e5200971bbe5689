package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compile compiles a tool's schema as JSON Schema 2020-12 (its meta-schema
// checked) with santhosh-tekuri/jsonschema, as the server does.
func compile(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	require.NoError(t, c.AddResource("mem:///schema.json", doc))
	s, err := c.Compile("mem:///schema.json")
	require.NoError(t, err, "%s", raw)
	return s
}

// instance decodes a JSON instance for a validator.
func instance(t *testing.T, text string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
	require.NoError(t, err)
	return v
}

// TestPetstore3 loads the published Swagger Petstore 3 description
// (testdata/README.md says where it comes from): its 19 operations are
// 19 tools named by their operationIds, the servers entry is the base,
// every input and output schema compiles as JSON Schema 2020-12, and the
// inlined Pet schema accepts a pet and refuses one without its required
// name.
func TestPetstore3(t *testing.T) {
	data, err := os.ReadFile("testdata/petstore3.yaml")
	require.NoError(t, err)
	a, err := Load(data, "")
	require.NoError(t, err)
	assert.Equal(t, "https://petstore3.swagger.io/api/v3", a.Base())
	var names []string
	outputs := 0
	for _, tl := range a.Tools() {
		names = append(names, tl.Name)
		compile(t, tl.InputSchema)
		if tl.OutputSchema != nil {
			outputs++
			compile(t, tl.OutputSchema)
		}
	}
	assert.ElementsMatch(t, []string{
		"updatePet", "addPet", "findPetsByStatus", "findPetsByTags", "getPetById", "updatePetWithForm",
		"deletePet", "uploadFile", "getInventory", "placeOrder", "getOrderById", "deleteOrder",
		"createUser", "createUsersWithListInput", "loginUser", "logoutUser", "getUserByName", "updateUser", "deleteUser",
	}, names)
	assert.Positive(t, outputs)

	add := compile(t, toolByName(t, a, "addPet").InputSchema)
	require.NoError(t, add.Validate(instance(t, `{"body":{"name":"doggie","photoUrls":["u"],"category":{"id":1,"name":"Dogs"},"status":"available"}}`)))
	require.Error(t, add.Validate(instance(t, `{"body":{"photoUrls":["u"]}}`)), "name is required")
	require.Error(t, add.Validate(instance(t, `{"body":{"name":"d","photoUrls":[],"status":"sleeping"}}`)), "status is an enum")
	require.Error(t, add.Validate(instance(t, `{}`)), "the body is required")

	byID := toolByName(t, a, "getPetById")
	assert.True(t, byID.ReadOnly)
	get := compile(t, byID.InputSchema)
	require.NoError(t, get.Validate(instance(t, `{"petId":10}`)))
	require.Error(t, get.Validate(instance(t, `{"petId":"ten"}`)))
	assert.True(t, toolByName(t, a, "deletePet").Idempotent)
	out := decode(t, toolByName(t, a, "findPetsByStatus").OutputSchema)
	assert.Equal(t, []any{"result"}, out["required"], "an array of pets is wrapped")
}
