#include "fold_files.hpp"

#include <rocksdb/metadata.h>

#include <charconv>
#include <algorithm>
#include <vector>

namespace exactly::dedupe {

namespace {

constexpr const char* kSeqEnd = "exactly.dedupe.seq.end";

class FoldLabel final : public rocksdb::TablePropertiesCollector {
 public:
  explicit FoldLabel(uint64_t end) : end_(end) {}
  rocksdb::Status AddUserKey(const rocksdb::Slice&, const rocksdb::Slice&, rocksdb::EntryType,
                             rocksdb::SequenceNumber, uint64_t) override {
    return rocksdb::Status::OK();
  }
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* props) override {
    (*props)[kSeqEnd] = std::to_string(end_);
    return rocksdb::Status::OK();
  }
  rocksdb::UserCollectedProperties GetReadableProperties() const override {
    return {{kSeqEnd, std::to_string(end_)}};
  }
  const char* Name() const override { return "exactly.dedupe.FoldLabel"; }

 private:
  uint64_t end_;
};

class FoldLabelFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  explicit FoldLabelFactory(uint64_t end) : end_(end) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new FoldLabel(end_);
  }
  const char* Name() const override { return "exactly.dedupe.FoldLabelFactory"; }

 private:
  uint64_t end_;
};

}  // namespace

std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> fold_label(uint64_t seq_end) {
  return std::make_shared<FoldLabelFactory>(seq_end);
}

FoldFiles inspect_fold_files(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
  FoldFiles out;
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(cf, &meta);
  // Table readers stay open (max_open_files = -1): their properties are in memory.
  rocksdb::TablePropertiesCollection tables;
  if (!db->GetPropertiesOfAllTables(cf, &tables).ok()) {
    out.unlabelled = true;
    return out;
  }
  for (const auto& level : meta.levels) {
    const rocksdb::SstFileMetaData* oldest = nullptr;
    for (const auto& f : level.files) {
      if (level.level == 0 && (!oldest || f.smallest_seqno < oldest->smallest_seqno)) oldest = &f;
      FoldFile ff;
      ff.name = f.name;
      ff.level = level.level;
      auto t = tables.find(f.directory + "/" + f.relative_filename);
      if (t != tables.end()) {
        const auto& user = t->second->user_collected_properties;
        auto label = user.find(kSeqEnd);
        if (label != user.end())
          std::from_chars(label->second.data(), label->second.data() + label->second.size(),
                          ff.seq_end);
      }
      if (ff.seq_end == 0) out.unlabelled = true;
      out.files.push_back(std::move(ff));
    }
    if (oldest)
      for (auto& ff : out.files)
        if (ff.name == oldest->name) ff.oldest_in_level0 = true;
  }
  std::sort(out.files.begin(), out.files.end(),
            [](const FoldFile& a, const FoldFile& b) { return a.seq_end < b.seq_end; });
  return out;
}

}  // namespace exactly::dedupe
