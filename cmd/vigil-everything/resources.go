package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/vigil-mcp/vigil/server"
)

// watchedURI is the resource that vigil_touch_resource reports as updated.
const watchedURI = "test://watched-resource"

// addResources registers the conformance resources and the resource
// template.
func addResources(s *server.Server) error {
	png, err := decodeBase64(testImageBase64)
	if err != nil {
		return err
	}
	text := func(uri, mime, body string) server.ResourceHandler {
		return func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
		}
	}
	return errors.Join(
		s.AddResource(server.Resource{
			URI: "test://static-text", Name: "static-text", Title: "Static Text Resource",
			Description: "A static text resource for testing", MIMEType: "text/plain",
		}, text("test://static-text", "text/plain", "This is the content of the static text resource.")),
		s.AddResource(server.Resource{
			URI: "test://static-binary", Name: "static-binary", Title: "Static Binary Resource",
			Description: "A static binary resource (image) for testing", MIMEType: "image/png",
		}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: "test://static-binary", MIMEType: "image/png", Blob: png}}}, nil
		}),
		s.AddResourceTemplate(server.ResourceTemplate{
			URITemplate: "test://template/{id}/data", Name: "template", Title: "Resource Template",
			Description: "A resource template with parameter substitution", MIMEType: "application/json",
		}, readTemplate),
		s.AddResource(server.Resource{
			URI: watchedURI, Name: "watched-resource", Title: "Watched Resource",
			Description: "A resource whose subscribers are notified of an update each time the vigil_touch_resource tool runs",
			MIMEType:    "text/plain",
		}, text(watchedURI, "text/plain", "Watched resource content")),
	)
}

// readTemplate reads test://template/{id}/data: a JSON document naming id.
func readTemplate(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
	id := req.Variables["id"]
	body, err := json.Marshal(struct {
		ID           string `json:"id"`
		TemplateTest bool   `json:"templateTest"`
		Data         string `json:"data"`
	}{id, true, "Data for ID: " + id})
	if err != nil {
		return nil, err
	}
	return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: req.URI, MIMEType: "application/json", Text: string(body)}}}, nil
}
