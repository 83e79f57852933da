package serverlab.mvc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import serverlab.contract.ServerSettings;

/** Contract v1 on Spring Boot MVC and embedded Tomcat. */
@SpringBootApplication(proxyBeanMethods = false)
public class MvcServer {

  /** Used verbatim in the hello body; matches display_name in server.toml. */
  public static final String DISPLAY_NAME = "Spring Boot MVC";

  public static void main(String[] args) {
    // Read and check WORKERS and WORKDAY_CALENDAR before anything starts: a bad setting exits
    // with one clear line, and requests never touch the calendar file. WORKERS does not size
    // Tomcat's request pool (see application.properties).
    ServerSettings settings = ServerSettings.fromEnvironmentOrExit(DISPLAY_NAME);

    SpringApplication app = new SpringApplication(MvcServer.class);
    app.addInitializers(
        context -> context.getBeanFactory().registerSingleton("contract", settings.contract()));
    app.run(args);
  }
}
