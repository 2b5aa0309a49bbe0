#include "config/yaml_guard.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

namespace exactly::config {

namespace {

// Only where each document starts: no nodes are built.
class DocumentStarts : public YAML::EventHandler {
 public:
  YAML::Mark last;
  void OnDocumentStart(const YAML::Mark& m) override { last = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

std::optional<YamlProblem> check_yaml_stream(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  size_t docs = 0;
  while (parser.HandleNextDocument(starts))
    if (++docs > kMaxYamlDocuments) {
      const YAML::Mark& m = starts.last;
      return YamlProblem{m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1,
                         fmt::format("malformed YAML: more than {} documents, or the reader "
                                     "cannot get past this point (a ',' outside [ ] or {{ }}?)",
                                     kMaxYamlDocuments)};
    }
  return std::nullopt;
}

std::optional<YamlProblem> check_yaml_text(const std::string& text) {
  if (text.size() > kMaxConfigBytes)
    return YamlProblem{0, 0, fmt::format("file is over {} bytes, the most a pipeline file may "
                                         "have (split it into several files)",
                                         kMaxConfigBytes)};
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view l(text.data() + pos, end - pos);
    pos = end + 1;
    size_t first = l.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || l[first] == '#') continue;
    if (first == 0 && (l.substr(0, 3) == "---" || l[0] == '%')) continue;  // document start, directive
    if (first > 0)
      return YamlProblem{line, static_cast<int>(first) + 1,
                         "the first key is indented: top-level keys start in column 1 (an "
                         "indented first block makes YAML readers drop what follows its end)"};
    break;
  }
  return std::nullopt;
}

namespace {
// No config nests this deep; an alias inside its own anchor nests without end.
constexpr size_t kMaxYamlDepth = 200;

// YAML's own tags (`!!str 5`) mean what they say; any other (`!env HOME`, as some tools
// expand) was read as the plain text after it: `path: !env OUT` wrote a file named OUT.
bool known_tag(const std::string& tag) {
  if (tag.empty() || tag == "?" || tag == "!") return true;  // untagged (plain or quoted)
  static const char* kCore[] = {"str", "int", "float", "bool", "null", "map", "seq"};
  for (const char* t : kCore)
    if (tag == std::string("tag:yaml.org,2002:") + t) return true;
  return false;
}

// One walk over the document: counts nodes with aliases expanded, stopping once over
// the budget or the depth (`where` is the node it stopped at, inside the repeated part),
// or at the first node with a tag it does not know (`bad_tag` then holds the problem).
bool within(const YAML::Node& n, size_t& left, size_t depth, YAML::Mark& where,
            std::optional<YamlProblem>& bad_tag) {
  if (left == 0 || depth > kMaxYamlDepth) {
    where = n.Mark();
    return false;
  }
  if (!known_tag(n.Tag())) {
    bad_tag = YamlProblem{n.Mark().line + 1, n.Mark().column + 1,
                          fmt::format("unknown YAML tag '{}': exactly expands nothing by tag "
                                      "(write ${{NAME}} for an environment variable, "
                                      "${{file:/path}} for a file's contents)",
                                      n.Tag())};
    return false;
  }
  --left;
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!within(it->first, left, depth + 1, where, bad_tag) ||
          !within(it->second, left, depth + 1, where, bad_tag))
        return false;
  } else if (n.IsSequence()) {
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!within(*it, left, depth + 1, where, bad_tag)) return false;
  }
  return true;
}
}  // namespace

std::optional<YamlProblem> check_yaml_documents(const std::vector<YAML::Node>& docs, YAML::Node& doc) {
  doc = YAML::Node();
  bool have = false;
  for (const auto& d : docs) {
    if (d.IsNull()) continue;
    if (have)
      return YamlProblem{d.Mark().line + 1, d.Mark().column + 1,
                         "a second YAML document starts here: a pipeline file holds one document "
                         "(put every pipeline in its 'pipelines' list, or use several files)"};
    doc = d;
    have = true;
  }
  size_t left = kMaxYamlNodes;
  YAML::Mark where = doc.Mark();
  std::optional<YamlProblem> bad_tag;
  if (have && !within(doc, left, 0, where, bad_tag)) {
    if (bad_tag) return bad_tag;
    return YamlProblem{where.line + 1, where.column + 1,
                       fmt::format("the document expands to more than {} YAML nodes or nests "
                                   "deeper than {} (aliases repeating aliases, or an alias "
                                   "inside its own anchor?); refusing to read it",
                                   kMaxYamlNodes, kMaxYamlDepth)};
  }
  return std::nullopt;
}

}  // namespace exactly::config
