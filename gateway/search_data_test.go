package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The synthetic catalog of the search tests: 500 tools of 25 domains
// (files, git, issues, calendar, mail, chat, databases, cloud,
// payments, ...), generated here, deterministically, into
// testdata/search/tools.json, which is committed: TestSearchDataGenerated
// checks that the file is what this generates (VIGIL_UPDATE_SEARCH=1
// writes it). Each domain has three objects, each with the six usual
// verbs, and two tools of its own. The queries of
// testdata/search/queries.json are written by hand.

// searchDomain is one domain's tools.
type searchDomain struct {
	prefix  string // the names' prefix (snake and kebab styles)
	style   string // snake (prefix_verb_object), camel (verbPrefixObject) or kebab (prefix-verb-object)
	where   string // where the objects are, in the descriptions
	objects []searchObject
	extra   []searchExtra
}

// searchObject is what a domain's six verbs act on.
type searchObject struct {
	name, plural string // "event", "events"
	about        string // what one is, in words
	fields       string // its fields, space-separated (snake_case)
	filters      string // what its listing filters by, space-separated
}

// searchExtra is a tool of a domain's own: name (in the domain's style
// already), description, arguments (name:description, ;-separated).
type searchExtra struct{ name, desc, args string }

func searchDomains() []searchDomain {
	return []searchDomain{
		{"fs", "snake", "on the local file system", []searchObject{
			{"file", "files", "a file on disk (text or binary)", "path content encoding", "directory pattern"},
			{"directory", "directories", "a folder of the file system", "path recursive", "parent"},
			{"symlink", "symlinks", "a symbolic link pointing to another path", "path target", "directory"},
		}, []searchExtra{
			{"fs_move_path", "Move or rename a file or directory to a new path.", "source:the path to move;destination:the new path"},
			{"fs_tail_file", "Read the last lines of a text file, such as a log file.", "path:the file to read;lines:how many lines from the end"},
		}},
		{"git", "snake", "in a local git repository", []searchObject{
			{"branch", "branches", "a git branch of the repository", "name start_point", "remote merged"},
			{"commit", "commits", "a commit of the repository history with its message and changes", "message author paths", "author since until path"},
			{"tag", "tags", "a git tag marking a release or version", "name commit message", "pattern"},
		}, []searchExtra{
			{"git_diff", "Show the diff of unstaged or staged changes in the working tree.", "staged:compare the index instead of the working tree;path:limit to a path"},
			{"git_blame", "Show who last changed each line of a file and in which commit.", "path:the file;revision:the commit to start from"},
		}},
		{"github", "camel", "in a GitHub repository", []searchObject{
			{"issue", "issues", "a GitHub issue (bug report or feature request)", "title body labels assignees", "state labels assignee"},
			{"pull request", "pull requests", "a pull request proposing changes from one branch into another", "title body head base draft", "state author base"},
			{"release", "releases", "a published release of the repository with notes and assets", "tag_name name body prerelease", "prerelease"},
		}, []searchExtra{
			{"mergePullRequest", "Merge an open pull request into its base branch (merge, squash or rebase).", "pull_number:the pull request number;method:merge, squash or rebase"},
			{"addIssueComment", "Add a comment to an issue or pull request conversation.", "issue_number:the issue number;body:the comment text in Markdown"},
		}},
		{"jira", "kebab", "in a Jira project", []searchObject{
			{"ticket", "tickets", "a Jira ticket: a story, task or bug in a project backlog", "summary description issue_type priority assignee", "project status assignee sprint"},
			{"sprint", "sprints", "a time-boxed sprint of an agile board", "name start_date end_date goal", "board state"},
			{"epic", "epics", "an epic grouping related tickets into a larger piece of work", "name summary", "project"},
		}, []searchExtra{
			{"jira-transition-ticket", "Move a ticket to another workflow status, such as In Progress or Done.", "ticket_key:the ticket key like PROJ-123;status:the target status"},
			{"jira-log-work", "Log time spent working on a ticket (a worklog entry).", "ticket_key:the ticket key;time_spent:duration such as 2h 30m;comment:what was done"},
		}},
		{"calendar", "snake", "in the user's calendar", []searchObject{
			{"event", "events", "a calendar event: a meeting or appointment with a start and end time", "title start_time end_time attendees location", "time_min time_max calendar_id"},
			{"calendar", "calendars", "a calendar the user owns or subscribes to", "name timezone color", "access_role"},
			{"reminder", "reminders", "a reminder that notifies the user before an event", "event_id minutes_before method", "event_id"},
		}, []searchExtra{
			{"calendar_find_free_slots", "Find free time slots when all the given people are available for a meeting.", "attendees:email addresses;duration_minutes:length of the meeting;time_min:earliest start;time_max:latest end"},
			{"calendar_respond_to_invitation", "Accept, decline or tentatively accept a meeting invitation.", "event_id:the invitation's event;response:accepted, declined or tentative"},
		}},
		{"mail", "camel", "in the user's email mailbox", []searchObject{
			{"message", "messages", "an email message in the mailbox", "to cc subject body attachments", "from label unread after before"},
			{"draft", "drafts", "an email draft not sent yet", "to subject body", "query"},
			{"label", "labels", "a label (folder) that organizes email messages", "name color", "type"},
		}, []searchExtra{
			{"sendEmail", "Send an email to one or more recipients, with optional attachments.", "to:recipient addresses;subject:the subject line;body:the message text;attachments:file paths to attach"},
			{"replyToEmail", "Reply to an email message, keeping the thread.", "message_id:the message replied to;body:the reply text;reply_all:reply to all recipients"},
		}},
		{"slack", "snake", "in the Slack workspace", []searchObject{
			{"channel", "channels", "a Slack channel where a team chats", "name topic is_private", "types exclude_archived"},
			{"message", "messages", "a chat message posted in a channel or thread", "channel text thread_ts", "channel oldest latest"},
			{"user group", "user groups", "a user group that can be mentioned at once (like @oncall)", "name handle users", "include_disabled"},
		}, []searchExtra{
			{"slack_add_reaction", "Add an emoji reaction to a chat message.", "channel:the channel id;timestamp:the message timestamp;emoji:the emoji name"},
			{"slack_set_status", "Set the user's Slack status text and emoji, for example on vacation.", "text:the status text;emoji:the status emoji;expiration:when it clears"},
		}},
		{"pg", "snake", "in a PostgreSQL database", []searchObject{
			{"table", "tables", "a table of the PostgreSQL database with its columns", "schema name columns", "schema"},
			{"index", "indexes", "a database index that speeds up queries on a table", "table columns unique", "table"},
			{"role", "roles", "a database role (user) with its privileges", "name login password_valid_until", "login"},
		}, []searchExtra{
			{"pg_run_query", "Run a read-only SQL query against the PostgreSQL database and return the rows.", "sql:the SELECT statement;params:the query parameters;max_rows:how many rows at most"},
			{"pg_explain_query", "Show the query plan of a SQL statement (EXPLAIN ANALYZE) to find slow parts.", "sql:the statement to explain;analyze:run it to measure"},
		}},
		{"redis", "kebab", "in a Redis cache", []searchObject{
			{"key", "keys", "a Redis key holding a string, hash, list or set value", "key value ttl_seconds", "pattern type"},
			{"stream", "streams", "a Redis stream of entries (an append-only log)", "key fields maxlen", "pattern"},
			{"channel subscription", "channel subscriptions", "a pub/sub channel subscription", "channel", "pattern"},
		}, []searchExtra{
			{"redis-expire-key", "Set a time to live on a key so that it expires after some seconds.", "key:the key;seconds:time to live"},
			{"redis-flush-database", "Delete every key of the current Redis database (FLUSHDB).", "async:flush in the background"},
		}},
		{"s3", "kebab", "in Amazon S3 object storage", []searchObject{
			{"bucket", "buckets", "an S3 bucket holding objects in a region", "name region versioning", "region"},
			{"object", "objects", "an object (a stored file) in an S3 bucket", "bucket key body content_type", "bucket prefix"},
			{"lifecycle rule", "lifecycle rules", "a rule that expires or archives a bucket's objects after some days", "bucket prefix expiration_days transition_storage_class", "bucket"},
		}, []searchExtra{
			{"s3-presign-url", "Create a presigned URL that lets someone download an object for a limited time.", "bucket:the bucket;key:the object key;expires_seconds:how long the link works"},
			{"s3-sync-folder", "Upload a local folder to a bucket prefix, copying only changed files.", "local_path:the folder;bucket:the bucket;prefix:the destination prefix"},
		}},
		{"ec2", "snake", "in Amazon EC2", []searchObject{
			{"instance", "instances", "an EC2 virtual machine instance", "instance_type image_id key_name subnet_id", "state tag instance_type"},
			{"security group", "security groups", "a security group: firewall rules for instances", "name description vpc_id rules", "vpc_id"},
			{"volume", "volumes", "an EBS block storage volume attached to instances", "size_gb volume_type availability_zone", "state instance_id"},
		}, []searchExtra{
			{"ec2_reboot_instance", "Reboot (restart) a running virtual machine instance.", "instance_id:the instance"},
			{"ec2_create_snapshot", "Take a snapshot backup of an EBS volume.", "volume_id:the volume;description:what the snapshot is for"},
		}},
		{"k8s", "snake", "in a Kubernetes cluster", []searchObject{
			{"pod", "pods", "a Kubernetes pod running containers", "namespace name image", "namespace label_selector phase"},
			{"deployment", "deployments", "a deployment managing replicated pods of an application", "namespace name image replicas", "namespace label_selector"},
			{"config map", "config maps", "a ConfigMap holding configuration for pods", "namespace name data", "namespace"},
		}, []searchExtra{
			{"k8s_get_pod_logs", "Fetch the logs of a pod's container, optionally the last lines only.", "namespace:the namespace;pod:the pod name;container:the container;tail_lines:how many lines"},
			{"k8s_scale_deployment", "Scale a deployment to a number of replicas.", "namespace:the namespace;name:the deployment;replicas:the number of pods wanted"},
		}},
		{"docker", "camel", "on the local Docker engine", []searchObject{
			{"container", "containers", "a Docker container running from an image", "image name ports env", "status name"},
			{"image", "images", "a Docker image that containers run from", "repository tag", "dangling reference"},
			{"docker volume", "docker volumes", "a Docker volume persisting container data", "name driver", "dangling"},
		}, []searchExtra{
			{"buildDockerImage", "Build a Docker image from a Dockerfile in a directory.", "context_path:the build directory;tag:the image tag;dockerfile:the Dockerfile path"},
			{"execInContainer", "Execute a shell command inside a running container.", "container:the container name or id;command:the command to run"},
		}},
		{"dns", "kebab", "in a Cloudflare DNS zone", []searchObject{
			{"record", "records", "a DNS record (A, AAAA, CNAME, MX, TXT) of a domain", "zone_id type name content ttl proxied", "zone_id type name"},
			{"zone", "zones", "a DNS zone: a domain name managed here", "name plan", "status"},
			{"page rule", "page rules", "a page rule that redirects or caches URLs of a zone", "zone_id targets actions", "zone_id"},
		}, []searchExtra{
			{"dns-purge-cache", "Purge the CDN cache of a zone, entirely or for some URLs.", "zone_id:the zone;files:the URLs to purge"},
			{"dns-lookup", "Resolve a host name to its IP addresses and records, as a DNS query does.", "hostname:the name to resolve;type:the record type"},
		}},
		{"stripe", "snake", "in the Stripe payments account", []searchObject{
			{"customer", "customers", "a paying customer with a billing email and payment methods", "email name phone", "email created"},
			{"invoice", "invoices", "an invoice billing a customer for products or subscriptions", "customer items due_date", "customer status"},
			{"subscription", "subscriptions", "a recurring subscription of a customer to a price plan", "customer price quantity trial_days", "customer status price"},
		}, []searchExtra{
			{"stripe_refund_payment", "Refund a payment (charge), fully or partly, to the customer's card.", "payment_intent:the payment;amount:the amount to refund in cents;reason:why"},
			{"stripe_get_balance", "Get the account balance: money available and pending payouts.", ""},
		}},
		{"shop", "camel", "in the Shopify online store", []searchObject{
			{"product", "products", "a product sold in the store, with variants and price", "title description price vendor", "collection vendor status"},
			{"order", "orders", "a customer order with its line items and shipping", "customer line_items shipping_address", "status financial_status created_after"},
			{"discount code", "discount codes", "a discount (coupon) code customers enter at checkout", "code percentage starts_at ends_at", "status"},
		}, []searchExtra{
			{"adjustShopInventory", "Adjust the stock level (inventory quantity) of a product variant at a location.", "variant_id:the variant;location_id:the warehouse;delta:units to add or remove"},
			{"fulfillShopOrder", "Mark an order as shipped (fulfilled), with its tracking number.", "order_id:the order;tracking_number:the carrier tracking number;carrier:the shipping company"},
		}},
		{"crm", "snake", "in the Salesforce CRM", []searchObject{
			{"lead", "leads", "a sales lead: a prospect not qualified yet", "first_name last_name company email source", "status owner source"},
			{"opportunity", "opportunities", "a sales opportunity (deal) with an amount and a stage", "name account_id amount stage close_date", "stage owner close_date"},
			{"account", "accounts", "a customer account: a company the sales team works with", "name industry website", "industry owner"},
		}, []searchExtra{
			{"crm_convert_lead", "Convert a qualified lead into an account, a contact and an opportunity.", "lead_id:the lead;opportunity_name:the deal created"},
			{"crm_log_call", "Log a phone call with a contact as an activity.", "contact_id:the contact;subject:the call subject;notes:what was said"},
		}},
		{"support", "kebab", "in the Zendesk help desk", []searchObject{
			{"support ticket", "support tickets", "a customer support ticket: a request for help", "subject comment requester priority", "status priority requester"},
			{"macro", "macros", "a canned reply (macro) agents apply to tickets", "title actions", "active"},
			{"help article", "help articles", "an article of the help center knowledge base", "title body section", "section locale"},
		}, []searchExtra{
			{"support-assign-ticket", "Assign a support ticket to an agent or a group.", "ticket_id:the ticket;assignee:the agent;group:the group"},
			{"support-satisfaction-ratings", "List the customer satisfaction ratings (CSAT) given on solved tickets.", "score:good or bad;since:from when"},
		}},
		{"notion", "camel", "in the Notion workspace", []searchObject{
			{"page", "pages", "a Notion page of notes or documentation", "parent title content", "parent"},
			{"database", "databases", "a Notion database: a table of pages with properties", "parent title properties", "parent"},
			{"comment", "comments", "a comment on a Notion page or block", "page_id text", "page_id"},
		}, []searchExtra{
			{"appendNotionBlocks", "Append paragraphs, headings or to-do blocks to the end of a page.", "page_id:the page;blocks:the blocks to add"},
			{"queryNotionDatabase", "Query a Notion database's rows with filters and sorts.", "database_id:the database;filter:the filter;sorts:the sort order"},
		}},
		{"drive", "snake", "in Google Drive", []searchObject{
			{"drive file", "drive files", "a file stored in Google Drive", "name parent mime_type content", "folder mime_type owner"},
			{"folder", "folders", "a Drive folder holding files", "name parent", "parent"},
			{"permission", "permissions", "a sharing permission giving a person access to a Drive file", "file_id email role", "file_id"},
		}, []searchExtra{
			{"drive_share_file", "Share a Drive file with someone by email, as viewer, commenter or editor.", "file_id:the file;email:who gets access;role:viewer, commenter or editor"},
			{"drive_export_file", "Export a Google Doc or Sheet as PDF, DOCX or CSV.", "file_id:the file;mime_type:the export format"},
		}},
		{"sheets", "camel", "in a Google Sheets spreadsheet", []searchObject{
			{"spreadsheet", "spreadsheets", "a spreadsheet document with sheets (tabs)", "title sheets", "owner"},
			{"row", "rows", "a row of values in a sheet", "spreadsheet_id sheet values", "spreadsheet_id sheet"},
			{"chart", "charts", "a chart drawn from a range of cells", "spreadsheet_id type range", "spreadsheet_id"},
		}, []searchExtra{
			{"readSheetRange", "Read the cell values of a range such as Sheet1!A1:D20.", "spreadsheet_id:the spreadsheet;range:the A1 range"},
			{"writeSheetRange", "Write values into the cells of a range, overwriting them.", "spreadsheet_id:the spreadsheet;range:the A1 range;values:the rows of values"},
		}},
		{"dd", "snake", "in Datadog monitoring", []searchObject{
			{"monitor", "monitors", "an alerting monitor that watches a metric and pages when a threshold is crossed", "name query thresholds message", "tags status"},
			{"dashboard", "dashboards", "a dashboard of graphs and widgets", "title widgets layout", "author"},
			{"incident", "incidents", "a production incident (outage) with severity and responders", "title severity commander", "status severity"},
		}, []searchExtra{
			{"dd_query_metrics", "Query a time series metric (CPU, latency, error rate) over a time window.", "query:the metric query;from:start time;to:end time"},
			{"dd_mute_monitor", "Mute (silence) a monitor's alerts for a while, during maintenance.", "monitor_id:the monitor;end:when the mute ends"},
		}},
		{"geo", "kebab", "with maps and weather data", []searchObject{
			{"saved place", "saved places", "a place the user saved on the map (home, work, a restaurant)", "name latitude longitude", "category"},
			{"route", "routes", "a saved driving, walking or transit route between two places", "origin destination mode", "mode"},
			{"weather alert", "weather alerts", "a subscription to severe weather alerts for an area", "area severity", "area"},
		}, []searchExtra{
			{"geo-weather-forecast", "Get the weather forecast (temperature, rain, wind) for a city for the next days.", "location:city or coordinates;days:how many days"},
			{"geo-geocode-address", "Turn a street address into latitude and longitude coordinates.", "address:the address"},
		}},
		{"todo", "camel", "in the Todoist task manager", []searchObject{
			{"task", "tasks", "a to-do task with a due date and priority", "content due_date priority project_id", "project_id label due_before"},
			{"project", "projects", "a project grouping to-do tasks", "name color parent_id", "parent_id"},
			{"task label", "task labels", "a label to tag to-do tasks", "name color", "favorite"},
		}, []searchExtra{
			{"completeTodoTask", "Mark a to-do task as done (complete it).", "task_id:the task"},
			{"todoProductivityStats", "Get the user's productivity stats: tasks completed per day and week, karma.", ""},
		}},
		{"web", "snake", "on the web", []searchObject{
			{"bookmark", "bookmarks", "a saved web page bookmark with tags", "url title tags", "tag"},
			{"rss feed", "rss feeds", "an RSS feed followed for news", "url title", "category"},
			{"scheduled scrape", "scheduled scrapes", "a recurring job that downloads a web page and extracts data", "url selector schedule", "status"},
		}, []searchExtra{
			{"web_search", "Search the internet with a search engine and return the top result links and snippets.", "query:the search terms;count:how many results"},
			{"web_fetch_page", "Download a web page by URL and return its text content as Markdown.", "url:the page address;max_length:how much text"},
		}},
	}
}

// searchVerbs are the verbs every object gets, with the words of their
// descriptions.
var searchVerbs = []struct{ verb, desc string }{
	{"list", "List (show all) the %[2]s %[3]s, filtered by %[5]s. %[4]s"},
	{"get", "Get (fetch, read) one %[1]s by its id, with all its details. %[4]s"},
	{"create", "Create (add, make) a new %[1]s %[3]s. %[4]s"},
	{"update", "Update (edit, change, modify) an existing %[1]s %[3]s. %[4]s"},
	{"delete", "Delete (remove) a %[1]s %[3]s, permanently. %[4]s"},
	{"search", "Search (find, look up) %[2]s %[3]s matching a text query. %[4]s"},
}

// searchToolName returns a tool's name in a domain's style.
func searchToolName(d searchDomain, verb, object string) string {
	words := append([]string{verb}, strings.Fields(object)...)
	switch d.style {
	case "camel":
		var b strings.Builder
		b.WriteString(words[0])
		for _, w := range words[1:] {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
		return b.String()
	case "kebab":
		return d.prefix + "-" + strings.Join(words, "-")
	}
	return d.prefix + "_" + strings.Join(words, "_")
}

// searchSchema returns an input schema of args, "name:description"
// entries.
func searchSchema(args []string) json.RawMessage {
	type prop struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	}
	props := map[string]prop{}
	var required []string
	for _, a := range args {
		name, desc, _ := strings.Cut(a, ":")
		typ := "string"
		switch {
		case strings.HasPrefix(desc, "how many") || name == "limit" || strings.HasSuffix(name, "_days") || strings.HasSuffix(name, "_seconds") || name == "replicas" || name == "amount":
			typ = "integer"
		case strings.HasPrefix(name, "is_") || name == "recursive" || name == "draft" || name == "unique" || name == "staged" || name == "prerelease":
			typ = "boolean"
		}
		props[name] = prop{Type: typ, Description: desc}
		if len(required) == 0 {
			required = append(required, name)
		}
	}
	b, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		panic(err)
	}
	return b
}

// searchTool is one tool of the synthetic catalog.
type searchTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// generateSearchTools returns the synthetic catalog.
func generateSearchTools() []searchTool {
	var tools []searchTool
	for _, d := range searchDomains() {
		for _, o := range d.objects {
			idArg := strings.ReplaceAll(o.name, " ", "_") + "_id:the id of the " + o.name
			var fieldArgs []string
			for _, f := range strings.Fields(o.fields) {
				fieldArgs = append(fieldArgs, f+":the "+strings.ReplaceAll(f, "_", " ")+" of the "+o.name)
			}
			var filterArgs []string
			for _, f := range strings.Fields(o.filters) {
				filterArgs = append(filterArgs, f+":only the "+o.plural+" of this "+strings.ReplaceAll(f, "_", " "))
			}
			for _, v := range searchVerbs {
				object := o.name
				if v.verb == "list" || v.verb == "search" {
					object = o.plural
				}
				var args []string
				switch v.verb {
				case "list":
					args = append(append(args, filterArgs...), "limit:how many at most", "cursor:the page to continue from")
				case "get", "delete":
					args = []string{idArg}
				case "create":
					args = fieldArgs
				case "update":
					args = append([]string{idArg}, fieldArgs...)
				case "search":
					args = append([]string{"query:the text to look for"}, filterArgs...)
				}
				tools = append(tools, searchTool{
					Name:        searchToolName(d, v.verb, object),
					Description: fmt.Sprintf(v.desc, o.name, o.plural, d.where, "A "+o.name+" is "+o.about+".", strings.ReplaceAll(strings.ReplaceAll(o.filters, "_", " "), " ", ", ")),
					InputSchema: searchSchema(args),
				})
			}
		}
		for _, x := range d.extra {
			var args []string
			if x.args != "" {
				args = strings.Split(x.args, ";")
			}
			tools = append(tools, searchTool{Name: x.name, Description: x.desc, InputSchema: searchSchema(args)})
		}
	}
	return tools
}

// TestSearchDataGenerated: testdata/search/tools.json is the synthetic
// catalog, 500 tools with distinct names.
func TestSearchDataGenerated(t *testing.T) {
	tools := generateSearchTools()
	require.Len(t, tools, 500)
	seen := map[string]bool{}
	for _, tool := range tools {
		require.False(t, seen[tool.Name], "%s twice", tool.Name)
		seen[tool.Name] = true
	}
	want, err := json.MarshalIndent(tools, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	path := filepath.Join("testdata", "search", "tools.json")
	if os.Getenv("VIGIL_UPDATE_SEARCH") == "1" {
		require.NoError(t, os.WriteFile(path, want, 0o644))
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is not what generateSearchTools makes: run with VIGIL_UPDATE_SEARCH=1", path)
}
