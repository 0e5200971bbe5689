module github.com/vigil-mcp/vigil

go 1.26.0

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/stretchr/testify v1.12.1
	github.com/yosida95/uritemplate/v3 v3.0.2
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
