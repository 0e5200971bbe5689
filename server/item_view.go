package server

// The kinds of item an item view ([Server.SetItemView]) is asked about.
const (
	ItemPrompt           = "prompt"           // key: the prompt's name
	ItemResource         = "resource"         // key: the resource's URI
	ItemResourceTemplate = "resourceTemplate" // key: the template's URI template
)

// SetItemView hides the prompts, resources and resource templates for
// which view returns false from req (kind is [ItemPrompt],
// [ItemResource] or [ItemResourceTemplate]; key names the item):
// prompts/list, resources/list and resources/templates/list do not show
// them, prompts/get answers as for an unknown prompt, resources/read and
// resources/subscribe as for a URI nothing serves (no resource fallback
// is asked), completion/complete as for an unknown prompt or template,
// and subscriptions/listen does not honor a subscription to one. Nil shows
// them all again. A gateway sets one so that each of its endpoints
// serves only its selection. view must be safe for concurrent use; so is
// SetItemView.
func (s *Server) SetItemView(view func(req *Request, kind, key string) bool) {
	if view == nil {
		s.itemView.Store(nil)
		return
	}
	s.itemView.Store(&view)
}

// itemShown reports whether the item view, if any, shows req the item
// of kind and key.
func (s *Server) itemShown(req *Request, kind, key string) bool {
	view := s.itemView.Load()
	return view == nil || (*view)(req, kind, key)
}

// itemFilter returns the filter of a list of kind for listPage: nil
// without an item view.
func itemFilter[T any](s *Server, req *Request, kind string, key func(T) string) func(T) bool {
	if s.itemView.Load() == nil {
		return nil
	}
	return func(item T) bool { return s.itemShown(req, kind, key(item)) }
}

// resourceShown reports whether the item view, if any, shows req what uri
// resolved to: the resource r, or the template t, or, when neither (a URI
// only the resource fallback may serve), uri itself.
func (s *Server) resourceShown(req *Request, uri string, r *registeredResource, t *registeredTemplate) bool {
	switch {
	case r != nil:
		return s.itemShown(req, ItemResource, r.res.URI)
	case t != nil:
		return s.itemShown(req, ItemResourceTemplate, t.tmpl.URITemplate)
	default:
		return s.itemShown(req, ItemResource, uri)
	}
}
