#pragma once
// Prompt, negative prompt and the sampling settings, as one GenerationSettings value. The model and the memory
// plan come from the main window (model picker, preset), not from here.
#include "core/api/generation_settings.h"
#include "core/text/embedding_library.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;
class QTimer;
class QToolButton;

namespace dd::ui {

class Section;
class StylesBox;
class TextEncoderBox;

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);
    ~PromptPanel() override;
    // The settings as shown; with a random seed, `seed` is whatever the seed box holds (see takeSeed).
    api::GenerationSettings settings() const;
    void setSettings(const api::GenerationSettings& s);
    // The seed for the next run: a fresh random one when "Random" is on, else the box's value. Remembered for
    // "reuse last".
    int64_t takeSeed();
    int64_t lastSeed() const { return m_lastSeed; }
    bool randomSeed() const;
    void setRandomSeed(bool on);
    // The refiner field alone (a restored refiner found on disk); its hash is the engine's to fill in again.
    void setRefinerPath(const QString& path);
    int batchCount() const;
    void setBatchCount(int runs);
    QPlainTextEdit* promptEdit() const { return m_prompt; }
    // Size presets follow the model family ("SD 1.x", "SD 2.x", "SDXL", ...).
    void setModelFamily(const QString& family, bool demo);
    // The prompt styles' library (styles.csv; "" = none).
    void setStylesFile(const QString& path);
    StylesBox* stylesBox() const { return m_styles; }
    // The textual-inversion embeddings in these folders: counted by the token counters, offered by Embeddings.
    void setEmbeddingFolders(const std::vector<std::string>& folders);

signals:
    // Size, batch, guidance or refiner changed: what the memory prediction depends on.
    void shapeChanged();
    // Prompt, negative, seed, steps, guidance or sampler changed: what live mode follows.
    void edited();
    void notice(const QString& message);  // for the status bar

private:
    void updateTokenCounts();
    void showSamplerChoices();
    void updateEmbeddingsMenu();
    void updateRefinerSummary();
    void updateTextEncoderSummary();
    void updateVariationSummary();
    QWidget* buildVariationBox();
    QComboBox* m_rng;      // the noise's source: CPU or NV (docs/reproduce.md)
    QSpinBox* m_ensd;      // A1111's Eta noise seed delta
    void applySizePreset(int index);

    QPlainTextEdit* m_prompt;
    QPlainTextEdit* m_negative;
    QLabel* m_promptTokens;
    QLabel* m_negativeTokens;
    QTimer* m_countTimer;
    QToolButton* m_embeddingsButton;
    text::EmbeddingLibrary m_embeddings;
    QPlainTextEdit* m_lastPromptBox;  // where Embeddings inserts a name: the prompt box that had focus last
    QMetaObject::Connection m_focusWatch;  // qApp's focusChanged: cut before ~QWidget, which still changes focus
    QDoubleSpinBox* m_seed;  // seeds run to 2^32 - 1 (A1111), past QSpinBox's int
    QCheckBox* m_random;
    QSpinBox* m_steps;
    QDoubleSpinBox* m_cfg;
    QComboBox* m_sampler;
    QComboBox* m_scheduleType;  // "" = the sampler's default (diffusers' where it has one)
    QCheckBox* m_asComfyUi;  // api::GenerationSettings::sampleAs, shown once an image set it
    QComboBox* m_predictionType;   // "" = the model's scheduler config
    QComboBox* m_timestepSpacing;  // "" = the model's, else the sampler's default
    QComboBox* m_sizePreset;
    QSpinBox* m_width;
    QSpinBox* m_height;
    QSpinBox* m_batch;
    QSpinBox* m_batchCount;
    QLineEdit* m_refiner;          // SDXL refiner path ("" = none), docs/refiner.md
    QDoubleSpinBox* m_refinerSwitch;
    Section* m_refinerSection;
    StylesBox* m_styles;
    Section* m_stylesSection;
    TextEncoderBox* m_textEncoder;  // clip skip, emphasis, pad conds
    Section* m_textEncoderSection;
    // A1111's variation seed (docs/explore.md): a folded line under the seed.
    QDoubleSpinBox* m_variationSeed;
    QDoubleSpinBox* m_variationStrength;
    QSpinBox *m_resizeFromWidth, *m_resizeFromHeight;
    Section* m_variationSection;
    int64_t m_lastSeed = -1;
    api::GenerationSettings m_hidden;  // fields this panel does not edit, kept through setSettings
};

} // namespace dd::ui
